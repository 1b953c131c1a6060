package export

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultPushTimeout bounds a push when PushOptions.Timeout is zero.
const DefaultPushTimeout = 10 * time.Second

// PushOptions say where Push sends the metrics.
type PushOptions struct {
	// URL is the Pushgateway's base URL (http://host:9091, or a prefix
	// behind a proxy).
	URL string
	// Job and Instance are the grouping key: the metrics replace the
	// group /metrics/job/<Job>/instance/<Instance>. Instance may be empty
	// (the group is then /metrics/job/<Job>).
	Job, Instance string
	// Timeout bounds the whole request (DefaultPushTimeout when zero).
	Timeout time.Duration
	// Client sends the request (http.DefaultClient when nil).
	Client *http.Client
}

// PushURL is the Pushgateway URL of the group job/instance under base.
// Values holding a '/' (or empty) are sent base64url-encoded as the
// Pushgateway defines ("instance@base64/…").
func PushURL(base, job, instance string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("push URL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("push URL %q: want http:// or https://", base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("push URL %q: no host", base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("push URL %q: no query or fragment, only the Pushgateway's base URL", base)
	}
	if job == "" {
		return "", errors.New("push: the job name is empty")
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/") + "/metrics/" + groupPart("job", job)
	if instance != "" {
		path += "/" + groupPart("instance", instance)
	}
	return u.Scheme + "://" + u.Host + path, nil
}

func groupPart(name, value string) string {
	if value == "" || strings.Contains(value, "/") {
		return name + "@base64/" + base64.RawURLEncoding.EncodeToString([]byte(value)) + pad(value)
	}
	return name + "/" + url.PathEscape(value)
}

// pad gives the empty value the "=" the Pushgateway wants (an empty path
// segment would be lost); other values go unpadded, which it accepts.
func pad(v string) string {
	if v == "" {
		return "="
	}
	return ""
}

// Push sends Families in the Prometheus text format with PUT, replacing
// the group's metrics on the Pushgateway. An answer other than 2xx is an
// error with its status and the first line of its body.
func Push(ctx context.Context, o PushOptions, in []Input) error {
	target, err := PushURL(o.URL, o.Job, o.Instance)
	if err != nil {
		return err
	}
	var body bytes.Buffer
	if err := WriteText(&body, in); err != nil {
		return err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultPushTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target, &body)
	if err != nil {
		return fmt.Errorf("push to %s: %w", target, err)
	}
	req.Header.Set("Content-Type", TextContentType)
	c := o.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("push to %s: no answer within %s", target, timeout)
		}
		return fmt.Errorf("push to %s: %w", target, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		line := strings.TrimSpace(strings.SplitN(string(msg), "\n", 2)[0])
		if line == "" {
			line = "(empty body)"
		}
		return fmt.Errorf("push to %s: %s: %s", target, resp.Status, line)
	}
	return nil
}
