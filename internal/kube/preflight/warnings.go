package preflight

import (
	"context"
	"sync"

	"k8s.io/client-go/rest"
)

// WarningCollector is a rest.WarningHandler (and
// rest.WarningHandlerWithContext) that keeps the API server's warnings —
// Pod Security admission's warn mode ("would violate PodSecurity
// \"restricted:latest\": …"), webhooks' warnings — so that Check can
// attach them to the dry runs that drew them. Install it in the
// rest.Config before making the clientset:
//
//	wc := preflight.NewWarningCollector(nil)
//	cfg.WarningHandlerWithContext = wc
//	cs, _ := kubernetes.NewForConfig(cfg)
//	rep := preflight.Check(ctx, cs, objs, preflight.WithWarnings(wc))
//
// A request made with a context from Collect has its warnings kept for
// that context; the others' are kept as unattributed (the most recent
// maxUnattributed) and passed on to next. It is safe for concurrent use.
type WarningCollector struct {
	next rest.WarningHandlerWithContext

	mu           sync.Mutex
	byKey        map[*collectKey][]string
	unattributed []string
}

// maxUnattributed bounds the warnings a WarningCollector keeps outside
// Collect.
const maxUnattributed = 100

type collectKey struct{ _ byte }

type collectCtxKey struct{}

// NewWarningCollector returns a collector that passes every warning on to
// next as well (nil: client-go's default, which logs them).
func NewWarningCollector(next rest.WarningHandlerWithContext) *WarningCollector {
	if next == nil {
		next = rest.WarningLogger{}
	}
	return &WarningCollector{next: next, byKey: map[*collectKey][]string{}}
}

// HandleWarningHeader implements rest.WarningHandler (no context: the
// warning is unattributed).
func (c *WarningCollector) HandleWarningHeader(code int, agent, text string) {
	c.HandleWarningHeaderWithContext(context.Background(), code, agent, text)
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
// Only code 299 warnings (the API server's) are kept, as client-go's own
// handlers do.
func (c *WarningCollector) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	c.next.HandleWarningHeaderWithContext(ctx, code, agent, text)
	if code != 299 || text == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := ctx.Value(collectCtxKey{}).(*collectKey); ok {
		if _, live := c.byKey[k]; live {
			c.byKey[k] = append(c.byKey[k], text)
			return
		}
	}
	c.unattributed = append(c.unattributed, text)
	if n := len(c.unattributed); n > maxUnattributed {
		c.unattributed = append([]string(nil), c.unattributed[n-maxUnattributed:]...)
	}
}

// Collect returns a context whose requests' warnings are kept apart, and a
// function that returns them and stops keeping them (call it once the
// requests are done).
func (c *WarningCollector) Collect(ctx context.Context) (context.Context, func() []string) {
	k := &collectKey{}
	c.mu.Lock()
	c.byKey[k] = []string{}
	c.mu.Unlock()
	return context.WithValue(ctx, collectCtxKey{}, k), func() []string {
		c.mu.Lock()
		defer c.mu.Unlock()
		w := c.byKey[k]
		delete(c.byKey, k)
		if len(w) == 0 {
			return nil
		}
		return w
	}
}

// Unattributed returns the warnings received outside Collect's contexts
// (the most recent maxUnattributed).
func (c *WarningCollector) Unattributed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.unattributed...)
}

var (
	_ rest.WarningHandler            = (*WarningCollector)(nil)
	_ rest.WarningHandlerWithContext = (*WarningCollector)(nil)
)
