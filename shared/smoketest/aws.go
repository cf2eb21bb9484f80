package smoketest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// CodeDeploy is Deployments over the CodeDeploy API: the deployment's
// Lambda targets (ListDeploymentTargets, BatchGetDeploymentTargets) and
// the hook's status (PutLifecycleEventHookExecutionStatus).
type CodeDeploy struct{ Client *codedeploy.Client }

var _ Deployments = CodeDeploy{}

// maxTargetsPerBatch is BatchGetDeploymentTargets' limit.
const maxTargetsPerBatch = 25

// Targets implements Deployments.
func (c CodeDeploy) Targets(ctx context.Context, deploymentID string) ([]Target, error) {
	var ids []string
	in := &codedeploy.ListDeploymentTargetsInput{DeploymentId: aws.String(deploymentID)}
	for {
		out, err := c.Client.ListDeploymentTargets(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list targets: %w", err)
		}
		ids = append(ids, out.TargetIds...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	var targets []Target
	for len(ids) > 0 {
		n := min(len(ids), maxTargetsPerBatch)
		out, err := c.Client.BatchGetDeploymentTargets(ctx, &codedeploy.BatchGetDeploymentTargetsInput{
			DeploymentId: aws.String(deploymentID), TargetIds: ids[:n]})
		if err != nil {
			return nil, fmt.Errorf("get targets: %w", err)
		}
		ids = ids[n:]
		for _, dt := range out.DeploymentTargets {
			lt := dt.LambdaTarget
			if lt == nil || lt.LambdaFunctionInfo == nil {
				continue // not a Lambda target
			}
			fi := lt.LambdaFunctionInfo
			t := Target{Function: aws.ToString(fi.FunctionName), Alias: aws.ToString(fi.FunctionAlias),
				Version: aws.ToString(fi.TargetVersion), Phase: phase(lt.LifecycleEvents, fi.TargetVersionWeight)}
			if t.Function == "" || t.Version == "" {
				return nil, fmt.Errorf("target %s names no function or target version", aws.ToString(lt.TargetId))
			}
			targets = append(targets, t)
		}
	}
	return targets, nil
}

// phase is the hook now running: the traffic lifecycle event in progress,
// else (no status reported) after traffic once the new version has it all.
func phase(events []cdtypes.LifecycleEvent, weight float64) Phase {
	for _, e := range events {
		name := Phase(aws.ToString(e.LifecycleEventName))
		if e.Status == cdtypes.LifecycleEventStatusInProgress && (name == BeforeAllowTraffic || name == AfterAllowTraffic) {
			return name
		}
	}
	if weight >= 100 {
		return AfterAllowTraffic
	}
	return BeforeAllowTraffic
}

// Report implements Deployments.
func (c CodeDeploy) Report(ctx context.Context, h Hook, succeeded bool) error {
	status := cdtypes.LifecycleEventStatusFailed
	if succeeded {
		status = cdtypes.LifecycleEventStatusSucceeded
	}
	_, err := c.Client.PutLifecycleEventHookExecutionStatus(ctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{
		DeploymentId: aws.String(h.DeploymentID), LifecycleEventHookExecutionId: aws.String(h.LifecycleEventHookExecutionID),
		Status: status,
	})
	return err
}

// Lambda is Invoker over the Lambda Invoke API (synchronous).
type Lambda struct{ Client *lambda.Client }

var _ Invoker = Lambda{}

// Invoke implements Invoker.
func (l Lambda) Invoke(ctx context.Context, function, qualifier string, payload []byte) (Answer, error) {
	out, err := l.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String(function), Qualifier: aws.String(qualifier), Payload: payload,
		InvocationType: lambdatypes.InvocationTypeRequestResponse,
	})
	if err != nil {
		return Answer{}, err
	}
	return Answer{Payload: out.Payload, ExecutedVersion: aws.ToString(out.ExecutedVersion),
		FunctionError: aws.ToString(out.FunctionError)}, nil
}

// CanaryFromSecret reads the canary key from the Secrets Manager secret
// arn (JSON {"apiKey","siteId"}) at each call: a new key is used at the
// next deployment. Errors never hold the value.
func CanaryFromSecret(client *secretsmanager.Client, arn string) func(context.Context) (*Canary, error) {
	return func(ctx context.Context) (*Canary, error) {
		out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			return nil, fmt.Errorf("read canary secret: %w", err)
		}
		var c Canary
		if out.SecretString == nil || json.Unmarshal([]byte(*out.SecretString), &c) != nil {
			return nil, errors.New(`canary secret is not the JSON object {"apiKey","siteId"}`)
		}
		if c.APIKey == "" || c.SiteID == "" {
			return nil, errors.New("canary secret lacks apiKey or siteId")
		}
		return &c, nil
	}
}
