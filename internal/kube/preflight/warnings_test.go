package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const restrictedWarning = `would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "cnibench" must set securityContext.allowPrivilegeEscalation=false), runAsNonRoot != true (pod or container "cnibench" must set securityContext.runAsNonRoot=true)`

// fakeAPIServer answers as an API server whose namespace bench enforces
// baseline and warns at restricted: the pod srv-a is admitted with Pod
// Security's warning, host-a refused; GET /api/v1/nodes draws a warning of
// its own. Creates must be dry runs.
func fakeAPIServer(t *testing.T) *httptest.Server {
	t.Helper()
	warn := func(w http.ResponseWriter, text string) {
		h, err := utilnet.NewWarningHeader(299, "-", text)
		if err != nil {
			t.Error(err)
		}
		w.Header().Add("Warning", h)
	}
	reply := func(w http.ResponseWriter, code int, obj any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(obj)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/bench":
			reply(w, 200, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
				ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: map[string]string{PodSecurityEnforceKey: "baseline", PodSecurityWarnKey: "restricted"}}})
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes":
			warn(w, "unrelated warning")
			reply(w, 200, &corev1.NodeList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeList"}})
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/bench/pods":
			if r.URL.Query().Get("dryRun") != "All" {
				t.Errorf("create without dry run: %s", r.URL)
			}
			var p corev1.Pod
			if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
				t.Error(err)
			}
			if p.Name == "host-a" {
				reply(w, 403, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
					Code: 403, Reason: metav1.StatusReasonForbidden, Details: &metav1.StatusDetails{Name: "host-a", Kind: "pods"},
					Message: `pods "host-a" is forbidden: ` + baselineHostPod})
				return
			}
			warn(w, restrictedWarning)
			p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
			reply(w, 201, &p)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Through a real client: the warnings of each dry run land on its object,
// the others' are unattributed, and the refusal is parsed from the API
// server's Status.
func TestCheckWarnings(t *testing.T) {
	srv := fakeAPIServer(t)
	wc := NewWarningCollector(rest.NoWarnings{})
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, WarningHandlerWithContext: wc, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := Check(context.Background(), cs, []Object{{Obj: testPod("srv-a")}, {Obj: testPod("host-a"), Without: "--no-host-pods"}},
		WithWarnings(wc), WithTimeout(5*time.Second))
	t.Logf("\n%s", rep)
	if n := rep.Namespaces[0]; !n.Exists || n.PodSecurity("enforce") != "baseline:latest" || n.PodSecurity("warn") != "restricted:latest" || n.PodSecurity("audit") != "" {
		t.Errorf("namespace %+v", n)
	}
	srvA, hostA := rep.Objects[0], rep.Objects[1]
	if srvA.Verdict != Admitted || len(srvA.Warnings) != 1 || srvA.Warnings[0] != restrictedWarning {
		t.Errorf("srv-a: %+v", srvA)
	}
	if hostA.Verdict != Refused || hostA.By != "PodSecurity baseline:latest" || len(hostA.Warnings) != 0 {
		t.Errorf("host-a: %+v", hostA)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0] != "unrelated warning" {
		t.Errorf("unattributed %q", rep.Warnings)
	}
	for _, s := range []string{"Pod/srv-a: " + restrictedWarning, "  unrelated warning", "Pod/host-a: label the namespace pod-security.kubernetes.io/enforce=privileged"} {
		if !strings.Contains(rep.String(), s) {
			t.Errorf("String lacks %q", s)
		}
	}
}

// Concurrent requests keep their warnings apart; codes other than 299 are
// passed on but not kept; the unattributed ones are bounded.
func TestWarningCollector(t *testing.T) {
	var passed sync.Map
	next := handlerFunc(func(_ context.Context, code int, _, text string) { passed.Store(text, code) })
	wc := NewWarningCollector(next)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, took := wc.Collect(context.Background())
			mine := fmt.Sprintf("w%d", i)
			wc.HandleWarningHeaderWithContext(ctx, 299, "-", mine)
			wc.HandleWarningHeaderWithContext(ctx, 199, "-", "misc "+mine)
			wc.HandleWarningHeader(299, "-", "plain")
			if got := took(); len(got) != 1 || got[0] != mine {
				t.Errorf("goroutine %d took %q", i, got)
			}
			// After took, the context's warnings are no longer kept
			// for it.
			wc.HandleWarningHeaderWithContext(ctx, 299, "-", "late")
		}()
	}
	wg.Wait()
	if _, ok := passed.Load("misc w3"); !ok {
		t.Error("a code 199 warning was not passed on")
	}
	u := wc.Unattributed()
	if len(u) != 40 {
		t.Errorf("%d unattributed: %q", len(u), u)
	}
	for i := range 2 * maxUnattributed {
		wc.HandleWarningHeader(299, "-", fmt.Sprint(i))
	}
	if u := wc.Unattributed(); len(u) != maxUnattributed || u[len(u)-1] != fmt.Sprint(2*maxUnattributed-1) {
		t.Errorf("unattributed not bounded to the latest: %d, last %q", len(u), u[len(u)-1])
	}
}

type handlerFunc func(ctx context.Context, code int, agent, text string)

func (f handlerFunc) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	f(ctx, code, agent, text)
}
