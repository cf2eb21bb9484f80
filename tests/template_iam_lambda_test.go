package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// awsRecorder stands between the Lambda functions under test and moto: one
// reverse proxy per function, recording every DynamoDB, SQS and Secrets
// Manager call it makes (action, resource, partition key). Once the test is
// over it checks each call against the function's IAM role in the expanded
// template: the action allowed on that resource, and the partition key
// inside the statement's dynamodb:LeadingKeys. The key prefixes are written
// once, in template.yaml; this is how they are kept true to the code.
type awsRecorder struct {
	target *url.URL
	mu     sync.Mutex
	procs  map[string]string    // logical id -> proxy URL
	calls  map[string][]awsCall // logical id -> calls
}

// awsCall is one authorised action, as IAM sees it.
type awsCall struct {
	Action   string // e.g. dynamodb:PutItem, sqs:SendMessage
	Resource string // table, table/index/NAME, queue URL, secret id
	Key      string // DynamoDB partition key value ("" when none)
}

func newAWSRecorder(t *testing.T, endpoint string) *awsRecorder {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return &awsRecorder{target: u, procs: map[string]string{}, calls: map[string][]awsCall{}}
}

// endpointFor is the AWS_ENDPOINT_URL of one function: a proxy to moto
// recording its calls.
func (r *awsRecorder) endpointFor(t *testing.T, logicalID string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if u, ok := r.procs[logicalID]; ok {
		return u
	}
	proxy := httputil.NewSingleHostReverseProxy(r.target)
	director := proxy.Director
	proxy.Director = func(req *http.Request) {
		director(req)
		req.Host = r.target.Host
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		calls := parseAWSCall(req.Header.Get("X-Amz-Target"), body)
		r.mu.Lock()
		r.calls[logicalID] = append(r.calls[logicalID], calls...)
		r.mu.Unlock()
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.procs[logicalID] = srv.URL
	return srv.URL
}

var keyCondition = regexp.MustCompile(`([#\w]+)\s*=\s*(:\w+)`)

// parseAWSCall turns one JSON-protocol request into the IAM actions it needs.
func parseAWSCall(target string, body []byte) []awsCall {
	svc, op, ok := strings.Cut(target, ".")
	if !ok {
		return []awsCall{{Action: "unknown:" + target}}
	}
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	str := func(m any, k string) string { s, _ := m.(map[string]any)[k].(string); return s }
	pkOf := func(item any) string {
		m, _ := item.(map[string]any)
		return str(m["pk"], "S")
	}
	switch {
	case strings.HasPrefix(svc, "DynamoDB"):
		table := str(req, "TableName")
		switch op {
		case "GetItem", "DeleteItem", "UpdateItem":
			return []awsCall{{"dynamodb:" + op, table, pkOf(req["Key"])}}
		case "PutItem":
			return []awsCall{{"dynamodb:PutItem", table, pkOf(req["Item"])}}
		case "Query":
			res := table
			attr := "pk"
			if idx := str(req, "IndexName"); idx != "" {
				res, attr = table+"/index/"+idx, idx+"pk"
			}
			names, _ := req["ExpressionAttributeNames"].(map[string]any)
			values, _ := req["ExpressionAttributeValues"].(map[string]any)
			key := ""
			for _, m := range keyCondition.FindAllStringSubmatch(str(req, "KeyConditionExpression"), -1) {
				name := m[1]
				if n, ok := names[name].(string); ok {
					name = n
				}
				if name == attr {
					key = str(values[m[2]], "S")
				}
			}
			return []awsCall{{"dynamodb:Query", res, key}}
		case "TransactWriteItems", "TransactGetItems":
			var out []awsCall
			for _, ti := range asList(req["TransactItems"]) {
				for kind, v := range ti.(map[string]any) {
					action := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
						"ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}[kind]
					k := v.(map[string]any)["Key"]
					if kind == "Put" {
						k = v.(map[string]any)["Item"]
					}
					out = append(out, awsCall{"dynamodb:" + action, str(v, "TableName"), pkOf(k)})
				}
			}
			return out
		case "BatchGetItem", "BatchWriteItem":
			var out []awsCall
			items, _ := req["RequestItems"].(map[string]any)
			for tbl, v := range items {
				if op == "BatchGetItem" {
					for _, k := range asList(v.(map[string]any)["Keys"]) {
						out = append(out, awsCall{"dynamodb:BatchGetItem", tbl, pkOf(k)})
					}
					continue
				}
				for _, w := range asList(v) {
					wm := w.(map[string]any)
					if p, ok := wm["PutRequest"].(map[string]any); ok {
						out = append(out, awsCall{"dynamodb:BatchWriteItem", tbl, pkOf(p["Item"])})
					}
					if d, ok := wm["DeleteRequest"].(map[string]any); ok {
						out = append(out, awsCall{"dynamodb:BatchWriteItem", tbl, pkOf(d["Key"])})
					}
				}
			}
			return out
		}
		return []awsCall{{"dynamodb:" + op, table, ""}}
	case svc == "AmazonSQS":
		// Batch variants are authorised by the single action.
		return []awsCall{{"sqs:" + strings.TrimSuffix(op, "Batch"), str(req, "QueueUrl"), ""}}
	case svc == "secretsmanager":
		return []awsCall{{"secretsmanager:" + op, str(req, "SecretId"), ""}}
	}
	return []awsCall{{Action: "unknown:" + target}}
}

// check compares the recorded calls with the roles of the expanded template.
func (r *awsRecorder) check(t *testing.T, e *lambdaEnv) {
	t.Helper()
	exp := expandTemplate(t, liveParams)
	roles := roleStatements(t, exp)
	// What the template's references stand for in this test.
	refs := map[string]string{
		`{"Fn::GetAtt":["PaymentsTable","Arn"]}`:        e.table,
		`{"Fn::Sub":"${PaymentsTable.Arn}/index/gsi1"}`: e.table + "/index/gsi1",
		`{"Fn::Sub":"${PaymentsTable.Arn}/index/gsi2"}`: e.table + "/index/gsi2",
		`{"Fn::GetAtt":["DeliveriesQueue","Arn"]}`:      e.queueURL,
		`{"Fn::GetAtt":["DeliveriesDLQ","Arn"]}`:        e.dlqURL,
		`{"Ref":"UpstreamSecretArn"}`:                   e.secretARN,
		`{"Ref":"CanaryKeySecretArn"}`:                  e.canaryARN,
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for fn := range r.procs {
		role := strings.TrimSuffix(fn, "Function") + "Role"
		seen := map[string]bool{}
		var summary []string
		for _, c := range r.calls[fn] {
			prefix := c.Key
			if i := strings.Index(prefix, "#"); i >= 0 {
				prefix = prefix[:i+1]
			}
			line := fmt.Sprintf("%s %s %s", c.Action, c.Resource, prefix)
			if seen[line] {
				continue
			}
			seen[line] = true
			summary = append(summary, line)
			if !allowedBy(roles[role], refs, c) {
				t.Errorf("%s: %s on %s (partition key %q) is not allowed by %s in template.yaml", fn, c.Action, c.Resource, c.Key, role)
			}
		}
		sort.Strings(summary)
		t.Logf("%s used: %s", fn, strings.Join(summary, "; "))
	}
}

func allowedBy(sts []statement, refs map[string]string, c awsCall) bool {
	for _, s := range sts {
		if !slices.Contains(s.actions, c.Action) {
			continue
		}
		onResource := false
		for _, res := range s.resources {
			if refs[jsonText(res)] == c.Resource {
				onResource = true
			}
		}
		if !onResource {
			continue
		}
		if !strings.HasPrefix(c.Action, "dynamodb:") {
			return true
		}
		for _, k := range s.leadingKeys() {
			if c.Key != "" && strings.HasPrefix(c.Key, strings.TrimSuffix(k, "*")) {
				return true
			}
		}
	}
	return false
}
