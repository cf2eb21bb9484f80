package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/yp/paysvc/"

// The layers, lowest first. A package may import packages of its own layer
// or lower ones. Test support may import anything, and nothing but tests
// and test support may import it.
const (
	foundation = iota // values, errors, clocks, the strict JSON reader, port-only packages
	domain            // the business rules and the ports they declare
	appLayer          // decoding and encoding per endpoint group, management operations
	transport         // HTTP pipeline, Lambda adapter, request tracing
	adapter           // stores, queues, the upstream client and its connector, the simulator, metrics, the webhook sender, the merchants' Go client
	wiring            // configuration and assembling the service
	tooling           // helpers the tests and the tools share (internal/): moto_server, the Lambda harness, sample bodies
	mains             // cmd/ and functions/: wire only
	testSupport
)

// layerOf assigns every package of the module; the longest matching prefix
// wins. A package missing here fails the test: place it on purpose.
var layerOf = map[string]int{
	"docs":                        foundation,
	"shared/apperr":               foundation,
	"shared/clock":                foundation,
	"shared/money":                foundation,
	"shared/storeerr":             foundation,
	"shared/jsonin":               foundation,
	"shared/queue":                foundation,
	"shared/webhooks/target":      foundation,
	"shared/tenant":               domain,
	"shared/idempotency":          domain,
	"shared/ratelimit":            domain,
	"shared/payments":             domain,
	"shared/webhooks":             domain,
	"shared/notifications":        domain,
	"shared/paymentsapp":          appLayer,
	"shared/lookup":               appLayer, // the merchant's read-only views: query decoding, reads, answers
	"shared/provision":            appLayer,
	"shared/webhooksapp":          appLayer,
	"shared/httpapi":              transport,
	"shared/lambdaapi":            transport,
	"shared/tracing":              transport,
	"shared/store":                adapter,
	"shared/queue/sqsqueue":       adapter,
	"shared/queue/localqueue":     adapter,
	"shared/upstream":             adapter, // the typed client; connector/ implements payments.Upstream over it
	"shared/upstream/simulator":   adapter,
	"shared/observe":              adapter, // CloudWatch EMF metrics
	"shared/sdkbody":              adapter, // the AWS SDK clients' request bodies
	"shared/webhooks/sender":      adapter, // the HTTP sender (webhooks.Poster)
	"shared/client":               adapter, // its own module (standard library only), required with a replace
	"shared/webhooks/verify":      adapter, // client.VerifyWebhook under the name the service's tests use
	"shared/eventreplay":          adapter,
	"shared/smoketest":            adapter, // the deployment gate over the CodeDeploy and Lambda SDK clients
	"shared/config":               wiring,
	"shared/app":                  wiring,
	"shared/localserver":          wiring,
	"shared/admincli":             wiring,
	"internal/motoserver":         tooling,
	"internal/lambdaharness":      tooling,
	"internal/bodies":             tooling,
	"internal/awsfake":            tooling, // CodeDeploy's and Lambda's calls served for tests (moto has neither)
	"shared/capacity":             wiring,  // models the assembled service over the DynamoDB adapter's items
	"shared/adminapi":             wiring,  // the local server's admin API and the operations behind it and the dashboard
	"shared/dashboard":            wiring,  // the local server's dashboard: pages over adminapi
	"cmd":                         mains,
	"functions":                   mains,
	"internal/layers":             testSupport,
	"shared/testenv":              testSupport,
	"shared/testutil":             testSupport,
	"shared/store/storetest":      testSupport,
	"shared/queue/queuetest":      testSupport,
	"shared/openapicheck":         testSupport,
	"shared/upstream/upstreamapi": testSupport,
	"tests":                       testSupport,
}

// knownExceptions are imports that break the order, each with its
// reason. Remove an entry when its import is gone (the test says so).
var knownExceptions = map[[2]string]string{}

func layer(t *testing.T, pkg string) int {
	best, l := "", -1
	for prefix, n := range layerOf {
		if (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) > len(best) {
			best, l = prefix, n
		}
	}
	if l < 0 {
		t.Errorf("package %s has no layer: add it to layerOf", pkg)
	}
	return l
}

// imports lists the module's non-test packages with their imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkgs[strings.TrimPrefix(f[0], module)] = f[1:]
	}
	if len(pkgs) < 40 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// TestDependencyOrder: no package imports one of a higher layer, and only
// test support imports test support.
func TestDependencyOrder(t *testing.T) {
	used := map[[2]string]bool{}
	for pkg, deps := range imports(t) {
		from := layer(t, pkg)
		for _, dep := range deps {
			if !strings.HasPrefix(dep, module) {
				continue
			}
			dep = strings.TrimPrefix(dep, module)
			to := layer(t, dep)
			if to <= from || from == testSupport {
				continue
			}
			if _, ok := knownExceptions[[2]string{pkg, dep}]; ok {
				used[[2]string{pkg, dep}] = true
				continue
			}
			t.Errorf("%s (layer %d) imports %s (layer %d), which sits above it", pkg, from, dep, to)
		}
	}
	for e := range knownExceptions {
		if !used[e] {
			t.Errorf("known exception %s -> %s no longer occurs: remove it", e[0], e[1])
		}
	}
}

// TestDomainKnowsNeitherHTTPNorStorage: the payment domain imports no HTTP,
// no request decoding, no AWS and no store adapter.
func TestDomainKnowsNeitherHTTPNorStorage(t *testing.T) {
	pkgs := imports(t)
	for _, pkg := range []string{"shared/payments", "shared/tenant", "shared/idempotency", "shared/ratelimit", "shared/notifications"} {
		deps, ok := pkgs[pkg]
		if !ok {
			t.Fatalf("%s not found", pkg)
		}
		for _, dep := range deps {
			switch {
			case dep == "net/http",
				strings.HasPrefix(dep, "github.com/aws/"),
				dep == module+"shared/jsonin",
				dep == module+"shared/paymentsapp",
				dep == module+"shared/httpapi",
				strings.HasPrefix(dep, module+"shared/store/"):
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}

// TestDomainDependsOnNoWireFormat: nothing the payment domain or the
// notification pipeline depends on, directly or not, speaks HTTP or the
// platform's wire format (the upstream adapter translates), and the
// webhooks domain needs no network package for its port (the sender is
// its adapter).
func TestDomainDependsOnNoWireFormat(t *testing.T) {
	for pkg, banned := range map[string][]string{
		"shared/payments":      {"net/http", "net", module + "shared/upstream", module + "shared/jsonin"},
		"shared/notifications": {"net/http", module + "shared/upstream"},
		"shared/webhooks":      {"net/http", "net", module + "shared/upstream"},
	} {
		out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, b := range banned {
			for _, d := range deps {
				if d == b || strings.HasPrefix(d, b+"/") && strings.HasPrefix(b, module) {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
}
