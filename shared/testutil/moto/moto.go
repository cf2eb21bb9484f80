// Package moto ties moto_server (internal/motoserver) to tests of the AWS
// adapters: Endpoint fails the test when no server can be started (never
// a skip), and Run from TestMain stops the server the test binary started:
//
//	func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }
package moto

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/yp/paysvc/internal/motoserver"
)

// EnvEndpoint names the variable that points tests at a running server.
const EnvEndpoint = motoserver.EnvEndpoint

// Region is the region every test client uses.
const Region = motoserver.Region

// Endpoint returns the URL of a moto server for t, starting one if needed.
// It fails t if the server cannot be started.
func Endpoint(t testing.TB) string {
	t.Helper()
	return must(t, motoserver.Endpoint)
}

// must is start's URL, or t fails.
func must(t testing.TB, start func() (string, error)) string {
	t.Helper()
	ep, err := start()
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// Second returns the URL of a second moto server of this test binary,
// started on first use (motoserver.Second). It fails t if the server
// cannot be started.
func Second(t testing.TB) string {
	t.Helper()
	return must(t, motoserver.Second)
}

// Stop kills the moto_servers started by Endpoint and Second, if any.
func Stop() { motoserver.Stop() }

// HTTPClient is the HTTP client of a test's AWS client
// (motoserver.HTTPClient).
func HTTPClient(t *http.Transport, timeout time.Duration) aws.HTTPClient {
	return motoserver.HTTPClient(t, timeout)
}

// Run runs the tests and then stops the server; use it from TestMain.
func Run(m *testing.M) int {
	defer Stop()
	return m.Run()
}

// DynamoClient returns a DynamoDB client for endpoint (motoserver.DynamoClient).
func DynamoClient(t testing.TB, endpoint string) *dynamodb.Client {
	t.Helper()
	return motoserver.DynamoClient(endpoint)
}

// TableName returns a table name unique to this run of t, derived from
// t.Name().
func TableName(t testing.TB) string {
	t.Helper()
	name, err := motoserver.TableName(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// SQSClient returns an SQS client for endpoint.
func SQSClient(t testing.TB, endpoint string) *sqs.Client {
	t.Helper()
	return sqs.New(sqs.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   HTTPClient(&http.Transport{}, 30*time.Second),
	})
}

// QueueName returns a queue name unique to this run of t (TableName made
// short and valid for SQS, with room for a "-dlq" suffix).
func QueueName(t testing.TB) string {
	t.Helper()
	name := strings.ReplaceAll(TableName(t), ".", "_")
	if len(name) > 70 {
		name = name[len(name)-70:]
	}
	return name
}
