package smoketest_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/yp/paysvc/internal/awsfake"
	"github.com/yp/paysvc/shared/smoketest"
)

func awsConfig(endpoint string) aws.Config {
	return aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint: aws.String(endpoint)}
}

// TestCodeDeployAdapter: the SDK client reads a deployment's Lambda
// targets (function, alias, new version, the hook in progress) and
// reports the hook's status, as CodeDeploy's JSON protocol has them.
func TestCodeDeployAdapter(t *testing.T) {
	fake := awsfake.NewCodeDeploy()
	fake.AddDeployment("d-BEFORE", awsfake.LambdaTarget{Function: "fn-a", CurrentVersion: "3", TargetVersion: "4", Phase: "BeforeAllowTraffic"})
	fake.AddDeployment("d-AFTER", awsfake.LambdaTarget{Function: "fn-b", Alias: "live", CurrentVersion: "9", TargetVersion: "10", Phase: "AfterAllowTraffic"})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cd := smoketest.CodeDeploy{Client: codedeploy.NewFromConfig(awsConfig(srv.URL))}
	ctx := context.Background()
	for id, want := range map[string]smoketest.Target{
		"d-BEFORE": {Function: "fn-a", Alias: "live", Version: "4", Phase: smoketest.BeforeAllowTraffic},
		"d-AFTER":  {Function: "fn-b", Alias: "live", Version: "10", Phase: smoketest.AfterAllowTraffic},
	} {
		got, err := cd.Targets(ctx, id)
		if err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("Targets(%s) = %+v, %v; want [%+v]", id, got, err, want)
		}
	}
	if _, err := cd.Targets(ctx, "d-NONE"); err == nil {
		t.Error("an unknown deployment has targets")
	}
	if err := cd.Report(ctx, smoketest.Hook{DeploymentID: "d-BEFORE", LifecycleEventHookExecutionID: "h1"}, true); err != nil {
		t.Fatal(err)
	}
	if err := cd.Report(ctx, smoketest.Hook{DeploymentID: "d-AFTER", LifecycleEventHookExecutionID: "h2"}, false); err != nil {
		t.Fatal(err)
	}
	want := []awsfake.HookStatus{{DeploymentID: "d-BEFORE", HookExecutionID: "h1", Status: "Succeeded"},
		{DeploymentID: "d-AFTER", HookExecutionID: "h2", Status: "Failed"}}
	if got := fake.Reports(); jsonText(got) != jsonText(want) {
		t.Errorf("reports %+v, want %+v", got, want)
	}
}

// TestLambdaAdapter: a synchronous invocation of a version or an alias,
// with the version that ran and a function error.
func TestLambdaAdapter(t *testing.T) {
	fake := awsfake.NewLambda()
	fake.Register("fn-a", map[string]string{"live": "4"}, func(_ context.Context, version string, payload []byte) ([]byte, string, error) {
		if string(payload) == `"crash"` {
			return []byte(`{"errorType":"Runtime.ExitError","errorMessage":"exit status 2"}`), "Unhandled", nil
		}
		return []byte(`{"version":"` + version + `"}`), "", nil
	})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	l := smoketest.Lambda{Client: lambda.NewFromConfig(awsConfig(srv.URL))}
	ctx := context.Background()
	for _, tc := range []struct {
		qualifier, payload string
		want               smoketest.Answer
	}{
		{"4", `{}`, smoketest.Answer{Payload: []byte(`{"version":"4"}`), ExecutedVersion: "4"}},
		{"live", `{}`, smoketest.Answer{Payload: []byte(`{"version":"4"}`), ExecutedVersion: "4"}},
		{"4", `"crash"`, smoketest.Answer{Payload: []byte(`{"errorType":"Runtime.ExitError","errorMessage":"exit status 2"}`),
			ExecutedVersion: "4", FunctionError: "Unhandled"}},
	} {
		got, err := l.Invoke(ctx, "fn-a", tc.qualifier, []byte(tc.payload))
		if err != nil || string(got.Payload) != string(tc.want.Payload) || got.ExecutedVersion != tc.want.ExecutedVersion ||
			got.FunctionError != tc.want.FunctionError {
			t.Errorf("Invoke(%s, %s) = %+v (%s), %v; want %+v", tc.qualifier, tc.payload, got, got.Payload, err, tc.want)
		}
	}
	if _, err := l.Invoke(ctx, "fn-nope", "1", []byte(`{}`)); err == nil {
		t.Error("an unknown function was invoked")
	}
}
