package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Environment variables the code reads that the template must not or need
// not set, by reason. Every other variable is either set by the template
// for the functions in functionNeeds or has a default in docs/configuration.md.
var (
	// Local runs only (local server, admin CLI, tests).
	localOnlyEnv = map[string]string{
		"PAYSVC_ADDR":                  "local server address",
		"PAYSVC_SEED_FILE":             "local seed file",
		"PAYSVC_DATA_DIR":              "embedded store directory",
		"AWS_ENDPOINT_URL":             "points the AWS SDK at moto",
		"PAYSVC_UPSTREAM_API_KEY":      "local secret; in AWS it comes from PAYSVC_UPSTREAM_SECRET_ARN",
		"PAYSVC_UPSTREAM_HMAC_KEY":     "local secret; in AWS it comes from PAYSVC_UPSTREAM_SECRET_ARN",
		"PAYSVC_NOTIFICATION_USERNAME": "local secret; in AWS it comes from PAYSVC_UPSTREAM_SECRET_ARN",
		"PAYSVC_NOTIFICATION_PASSWORD": "local secret; in AWS it comes from PAYSVC_UPSTREAM_SECRET_ARN",
		"PAYSVC_WEBHOOK_ALLOW_LOCAL":   "development only (webhooks to localhost); refused in live",
		"GOMAXPROCS":                   "the local server's Go scheduler (embedded store)",
		"PAYSVC_SIM_LENIENT":           "the local server's simulated upstream: platform-like or lenient",
	}
	// Set by the Lambda runtime (Tracing: Active) or standard SDK switches.
	lambdaRuntimeEnv = map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":    "the EMF Function dimension; enables X-Ray",
		"AWS_LAMBDA_FUNCTION_VERSION": "the EMF Version dimension (the rollback alarms' new version)",
		"AWS_XRAY_DAEMON_ADDRESS":     "set by Lambda when Tracing is Active",
		"AWS_XRAY_SDK_DISABLED":       "X-Ray SDK's own off switch",
	}
	// The deployment gate's own settings (the smoke test function's), set
	// by the template and documented in docs/runbook.md (Deploy), not in
	// docs/configuration.md's table of the service's configuration.
	deployGateEnv = map[string]string{
		"PAYSVC_SMOKE_TARGETS":     "kind=function pairs: the functions the smoke test gates",
		"PAYSVC_CANARY_SECRET_ARN": "the canary merchant's key (CanaryKeySecretArn)",
	}
	// Secrets: never in the template (they come from Secrets Manager).
	secretEnv = []string{
		"PAYSVC_UPSTREAM_API_KEY", "PAYSVC_UPSTREAM_HMAC_KEY", "PAYSVC_NOTIFICATION_USERNAME", "PAYSVC_NOTIFICATION_PASSWORD",
	}
)

// functionNeeds lists, per function, the variables without which it cannot
// work in AWS (docs/architecture.md): the template must set them for it.
func functionNeeds() map[string][]string {
	base := []string{"PAYSVC_ENVIRONMENT", "PAYSVC_STORE", "PAYSVC_TABLE", "PAYSVC_LOG_LEVEL"}
	api := append(base[:len(base):len(base)], "PAYSVC_RATE_PER_SECOND", "PAYSVC_RATE_BURST")
	upstreamCaller := append(api[:len(api):len(api)], "PAYSVC_UPSTREAM_URL", "PAYSVC_UPSTREAM_SECRET_ARN", "PAYSVC_UPSTREAM_TIMEOUT")
	return map[string][]string{
		"ConfigFunction":            api,
		"SessionsFunction":          upstreamCaller,
		"PaymentsFunction":          upstreamCaller,
		"ModificationsFunction":     upstreamCaller,
		"NotificationsFunction":     append(base[:len(base):len(base)], "PAYSVC_UPSTREAM_SECRET_ARN", "PAYSVC_QUEUE_URL"),
		"WebhookDispatcherFunction": append(base[:len(base):len(base)], "PAYSVC_QUEUE_URL", "PAYSVC_DLQ_URL"),
		"SchedulerFunction":         append(base[:len(base):len(base)], "PAYSVC_UPSTREAM_URL", "PAYSVC_UPSTREAM_SECRET_ARN", "PAYSVC_UPSTREAM_TIMEOUT", "PAYSVC_QUEUE_URL", "PAYSVC_EXPIRY_NOTICE"),
		"SmokeTestFunction":         append(base[:len(base):len(base)], "PAYSVC_SMOKE_TARGETS", "PAYSVC_CANARY_SECRET_ARN"),
	}
}

// pendingFunctions names functions/<dir> packages of template functions
// that are still being written (issue 5 builds on the others, and a new
// function joins the template first): a missing directory listed here is
// reported with t.Log instead of failing, here and in
// lambda_functions_test.go. Once the directory exists it must be removed
// from here. Empty: every function exists.
var pendingFunctions = map[string]bool{}

var envNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*[A-Z0-9]$`)

// codeEnvVars parses the non-test Go files of the packages the functions are
// built from (shared/, functions/; not the test helpers) and returns the
// environment variables they read, with one position each: string literals
// passed to getenv/os.Getenv/os.LookupEnv, or passed next to a getenv
// function (config's duration/integer helpers), plus every PAYSVC_* literal.
func codeEnvVars(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	fset := token.NewFileSet()
	for _, root := range []string{"shared", "functions"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case "testutil", "testenv", "testdata":
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			add := func(lit *ast.BasicLit) {
				if lit == nil || lit.Kind != token.STRING {
					return
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil || !envNameRE.MatchString(v) {
					return
				}
				if _, ok := found[v]; !ok {
					rel, _ := filepath.Rel(repoRoot, path)
					found[v] = rel + ":" + strconv.Itoa(fset.Position(lit.Pos()).Line)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if isEnvCall(n) {
						for _, a := range n.Args {
							lit, _ := a.(*ast.BasicLit)
							add(lit)
						}
					}
				case *ast.BasicLit:
					if n.Kind == token.STRING && strings.HasPrefix(n.Value, `"PAYSVC_`) {
						add(n)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatalf("scan %s: %v", root, err)
		}
	}
	if len(found) == 0 {
		t.Fatal("no environment variables found in the code: the scanner is broken")
	}
	return found
}

// isEnvCall: getenv(...), os.Getenv(...), os.LookupEnv(...), or a call that
// is passed a function named getenv.
func isEnvCall(c *ast.CallExpr) bool {
	switch fn := c.Fun.(type) {
	case *ast.Ident:
		if fn.Name == "getenv" {
			return true
		}
	case *ast.SelectorExpr:
		if fn.Sel.Name == "Getenv" || fn.Sel.Name == "LookupEnv" {
			return true
		}
	}
	for _, a := range c.Args {
		if id, ok := a.(*ast.Ident); ok && id.Name == "getenv" {
			return true
		}
	}
	return false
}

// readmeEnvDefaults parses docs/configuration.md's Configuration table:
// variable -> default ("" when the table says "—").
func readmeEnvDefaults(t *testing.T) map[string]string {
	t.Helper()
	text := string(readFile(t, filepath.Join(repoRoot, "docs", "configuration.md")))
	start := strings.Index(text, "## Configuration")
	if start < 0 {
		t.Fatal("docs/configuration.md has no Configuration section")
	}
	out := map[string]string{}
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	for _, line := range strings.Split(text[start:], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		def := strings.TrimSpace(cells[2])
		if def == "—" || def == "-" {
			def = ""
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = def
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/configuration.md's Configuration table not found")
	}
	return out
}

func TestTemplateSetsEveryVariableTheFunctionsNeed(t *testing.T) {
	code := codeEnvVars(t)
	readme := readmeEnvDefaults(t)
	runbook := readFile(t, filepath.Join(repoRoot, "docs", "runbook.md"))
	for v, why := range deployGateEnv {
		if !strings.Contains(string(runbook), "`"+v+"`") {
			t.Errorf("%s (%s) is not documented in docs/runbook.md", v, why)
		}
		readme[v] = "" // documented, set by the template for the smoke test
	}
	tpl := loadTemplate(t)
	fns := tpl.functions()
	needs := functionNeeds()

	neededBySome := map[string]bool{}
	for id, vars := range needs {
		if _, ok := fns[id]; !ok {
			t.Errorf("functionNeeds names %s, which is not a template function", id)
		}
		for _, v := range vars {
			neededBySome[v] = true
			if _, ok := code[v]; !ok {
				t.Errorf("functionNeeds: %s needs %s, but no code reads it (stale entry?)", id, v)
			}
		}
	}

	var names []string
	for v := range code {
		names = append(names, v)
	}
	sort.Strings(names)
	t.Logf("the code reads %v", names)
	for _, v := range names {
		where := code[v]
		_, local := localOnlyEnv[v]
		_, runtime := lambdaRuntimeEnv[v]
		def, documented := readme[v]
		switch {
		case runtime:
			continue // provided by Lambda itself
		case !documented:
			t.Errorf("%s (read at %s) is not in docs/configuration.md's Configuration table", v, where)
		case local:
			continue
		case def == "" && !neededBySome[v]:
			t.Errorf("%s (read at %s) has no default in docs/configuration.md and no function needs it: add it to functionNeeds or document a default", v, where)
		}
	}
	for v := range readme {
		if _, ok := code[v]; !ok {
			t.Errorf("docs/configuration.md documents %s, but no code reads it", v)
		}
	}

	for id, fn := range fns {
		env := tpl.envVars(fn)
		for _, v := range needs[id] {
			if _, ok := env[v]; !ok {
				t.Errorf("%s needs %s (default %q) but the template does not set it", id, v, readme[v])
			}
		}
		for v := range env {
			if _, ok := code[v]; !ok {
				t.Errorf("%s: the template sets %s, which no code reads", id, v)
			}
			if _, ok := localOnlyEnv[v]; ok {
				t.Errorf("%s: the template sets the local-only %s (%s)", id, v, localOnlyEnv[v])
			}
		}
		for _, v := range secretEnv {
			if _, ok := env[v]; ok {
				t.Errorf("%s: the secret %s is a plain environment variable; use PAYSVC_UPSTREAM_SECRET_ARN", id, v)
			}
		}
	}
}

// makeTargets maps each build-<LogicalId> target of the Makefile to the
// package its recipe builds (./functions/<dir>).
func makeTargets(t *testing.T) map[string]string {
	t.Helper()
	raw := readFile(t, filepath.Join(repoRoot, "Makefile"))
	out := map[string]string{}
	target := ""
	pkg := regexp.MustCompile(`\./functions/([A-Za-z0-9_-]+)`)
	for _, line := range strings.Split(string(raw), "\n") {
		if m := makeTarget.FindStringSubmatch(line); m != nil {
			target = m[1]
			continue
		}
		if strings.HasPrefix(line, "\t") && target != "" {
			if m := pkg.FindStringSubmatch(line); m != nil {
				out[target] = m[1]
			}
			continue
		}
		target = ""
	}
	return out
}

func TestEveryFunctionDirHasATemplateFunctionAndBuildTarget(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repoRoot, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(repoRoot, "functions", e.Name(), "main.go")); err != nil {
				t.Errorf("functions/%s has no main.go", e.Name())
			}
			dirs[e.Name()] = true
		}
	}
	targets := makeTargets(t)
	tpl := loadTemplate(t)
	byDir := map[string]string{} // dir -> logical id, through the build target
	for id := range tpl.functions() {
		dir, ok := targets["build-"+id]
		if !ok {
			t.Errorf("template function %s has no Makefile target build-%s building ./functions/...", id, id)
			continue
		}
		if prev, dup := byDir[dir]; dup {
			t.Errorf("functions/%s is built for both %s and %s", dir, prev, id)
		}
		byDir[dir] = id
		if !dirs[dir] {
			if pendingFunctions[dir] {
				t.Logf("pending: %s builds functions/%s, which does not exist yet", id, dir)
				continue
			}
			t.Errorf("%s: build-%s builds ./functions/%s, which does not exist", id, id, dir)
		}
	}
	for dir := range dirs {
		if _, ok := byDir[dir]; !ok {
			t.Errorf("functions/%s has no template function (with a build-<LogicalId> target building it)", dir)
		}
		if pendingFunctions[dir] {
			t.Errorf("functions/%s exists now: remove it from pendingFunctions (and test it in lambda_functions_test.go)", dir)
		}
	}
}
