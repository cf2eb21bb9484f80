package sdkbody

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// recorder answers every request with an empty DynamoDB answer and keeps
// the body it was handed.
type recorder struct{ body io.ReadCloser }

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.body = req.Body
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// What net/http does last with a body it wrote — copy what is left of it
// to the end — fails with io.EOF on the body the SDK hands its client
// once the SDK has closed it (as it does when the answer's headers are
// in), and ends cleanly on the body Client hands on.
func TestClosedBodyEndsCleanly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wrap    func(aws.HTTPClient) aws.HTTPClient
		wantEOF bool
	}{
		{"the SDK's body", func(c aws.HTTPClient) aws.HTTPClient { return c }, true},
		{"through Client", Client, false},
	} {
		rec := &recorder{}
		db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"),
			Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), HTTPClient: tc.wrap(rec)})
		item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: strings.Repeat("x", 8<<10)}}
		if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item}); err != nil {
			t.Fatalf("%s: PutItem: %v", tc.name, err)
		}
		if rec.body == nil {
			t.Fatalf("%s: no body sent", tc.name)
		}
		_, err := io.Copy(io.Discard, rec.body)
		if got := errors.Is(err, io.EOF); got != tc.wantEOF {
			t.Errorf("%s: copying the rest of the closed body: err = %v, want io.EOF: %t", tc.name, err, tc.wantEOF)
		}
	}
}
