package motoserver

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The server's address is found in its "Running on" line however the
// output is split into writes, and only once.
func TestTailBufferFindsTheAddress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one write", []string{"WARNING: dev server\n * Running on http://127.0.0.1:41234\nPress CTRL+C\n"}, "http://127.0.0.1:41234"},
		{"split inside the line", []string{" * Running on http://127.0.", "0.1:5", "01\n"}, "http://127.0.0.1:501"},
		{"split at the newline", []string{" * Running on http://127.0.0.1:6000", "\n * Running on http://127.0.0.1:7000\n"}, "http://127.0.0.1:6000"},
		{"not yet a whole line", []string{" * Running on http://127.0.0.1:6000"}, ""},
		{"another address", []string{" * Running on http://0.0.0.0:5000\n"}, ""},
	} {
		b := &tailBuffer{max: 64, want: runningOn, found: make(chan string, 1)}
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tc.name, n, err)
			}
		}
		got := ""
		select {
		case got = <-b.found:
		default:
		}
		if got != tc.want {
			t.Errorf("%s: found %q, want %q", tc.name, got, tc.want)
		}
		select {
		case again := <-b.found:
			t.Errorf("%s: found a second address %q", tc.name, again)
		default:
		}
	}
}

// withPythonPath puts the speed-ups' folder first on PYTHONPATH and keeps
// what was there.
func TestWithPythonPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"none set", []string{"HOME=/root"}, []string{"HOME=/root", "PYTHONPATH=/s"}},
		{"one set", []string{"PYTHONPATH=/a:/b", "HOME=/root"}, []string{"HOME=/root", "PYTHONPATH=/s:/a:/b"}},
		{"set empty", []string{"PYTHONPATH="}, []string{"PYTHONPATH=/s"}},
	} {
		if got := withPythonPath(tc.env, "/s"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: withPythonPath(%q) = %q, want %q", tc.name, tc.env, got, tc.want)
		}
	}
}

// A moto started with the speed-ups says they are on (and one started
// with PAYSVC_MOTO_SPEEDUPS=off does not); a transaction it
// refuses leaves the table as it was (rolled back to the one copy the
// speed-up keeps of it), and one it accepts writes every item.
func TestSpeedupsKeepTransactions(t *testing.T) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("moto_server is not on PATH: %v", err)
	}
	var s server
	if err := s.launch(bin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	on := os.Getenv(EnvSpeedups) != "off"
	if out := s.out.String(); strings.Contains(out, "motoserver speedups: on") != on {
		t.Fatalf("moto_server with %s=%q: speed-ups loaded = %t, want %t (internal/motoserver/speedups):\n%s",
			EnvSpeedups, os.Getenv(EnvSpeedups), !on, on, out)
	}
	ctx := context.Background()
	db := DynamoClient(s.endpoint)
	table := aws.String("speedups")
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            table,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": str("x"), "n": str("1")}}); err != nil {
		t.Fatal(err)
	}
	transact := func(n string) error { // its condition: item z exists
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: table, Key: map[string]types.AttributeValue{"pk": str("x")},
				UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": str(n)}}},
			{Put: &types.Put{TableName: table, Item: map[string]types.AttributeValue{"pk": str("y"), "n": str(n)}}},
			{ConditionCheck: &types.ConditionCheck{TableName: table, Key: map[string]types.AttributeValue{"pk": str("z")},
				ConditionExpression: aws.String("attribute_exists(pk)")}},
		}})
		return err
	}
	items := func() map[string]string {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: table, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, it := range out.Items {
			got[it["pk"].(*types.AttributeValueMemberS).Value] = it["n"].(*types.AttributeValueMemberS).Value
		}
		return got
	}
	var cancelled *types.TransactionCanceledException
	if err := transact("2"); !errors.As(err, &cancelled) {
		t.Fatalf("a transaction whose condition fails: err = %v, want it cancelled", err)
	}
	if got, want := items(), map[string]string{"x": "1"}; !maps.Equal(got, want) {
		t.Fatalf("after a cancelled transaction the table holds %v, want %v (as before it)", got, want)
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": str("z"), "n": str("0")}}); err != nil {
		t.Fatal(err)
	}
	if err := transact("3"); err != nil {
		t.Fatalf("a transaction whose condition holds: %v", err)
	}
	if got, want := items(), map[string]string{"x": "3", "y": "3", "z": "0"}; !maps.Equal(got, want) {
		t.Fatalf("after an accepted transaction the table holds %v, want %v", got, want)
	}
}
