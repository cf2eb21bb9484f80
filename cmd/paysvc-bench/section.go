package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/yp/paysvc/internal/motoserver"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/store/embedded"
)

// section is one section of the bench run: where its progress is logged
// and the cleanups to run when it ends. Failures are returned as errors.
type section struct {
	name string
	log  io.Writer

	mu       sync.Mutex
	cleanups []func()
}

// close runs the cleanups, last registered first (a cleanup may register
// more).
func (t *section) close() {
	for {
		t.mu.Lock()
		if len(t.cleanups) == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[len(t.cleanups)-1]
		t.cleanups = t.cleanups[:len(t.cleanups)-1]
		t.mu.Unlock()
		f()
	}
}

// Cleanup registers f to run when the section ends.
func (t *section) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// Logf writes to the progress log.
func (t *section) Logf(format string, args ...any) {
	fmt.Fprintf(t.log, t.name+": "+strings.TrimSuffix(format, "\n")+"\n", args...)
}

// TempDir returns a new temporary directory removed when the section ends.
func (t *section) TempDir() (string, error) {
	dir, err := os.MkdirTemp("", "paysvc-bench-"+filepath.Base(t.name)+"-")
	if err != nil {
		return "", fmt.Errorf("temporary directory: %w", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir, nil
}

// runSection runs fn with a fresh section and then its cleanups.
func runSection(name string, log io.Writer, fn func(t *section) error) error {
	t := &section{name: name, log: log}
	defer t.close()
	return fn(t)
}

// motoTable creates a table on moto for the section (deleted when it ends)
// and returns a client of it: one that sends one request at a time
// (motoserver.DynamoClient), since moto's transactions are not safe
// against concurrent requests to their table — one whose condition fails
// restores the table as it was when it began, losing writes committed
// meanwhile — where DynamoDB's are.
func (t *section) motoTable(ctx context.Context, opts ...func(*dynamodb.Options)) (*dynamodb.Client, string, error) {
	endpoint, err := motoserver.Endpoint()
	if err != nil {
		return nil, "", err
	}
	ddb := dynamodb.New(motoserver.DynamoClient(endpoint).Options(), opts...)
	table, err := motoserver.TableName(t.name) // moto table names derive from the section's
	if err != nil {
		return nil, "", err
	}
	if err := dynamo.CreateTable(ctx, ddb, table); err != nil {
		return nil, "", fmt.Errorf("create table: %w", err)
	}
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return ddb, table, nil
}

// embeddedStore opens an embedded store in a temporary directory, closed
// and removed when the section ends.
func (t *section) embeddedStore() (*embedded.Store, error) {
	dir, err := t.TempDir()
	if err != nil {
		return nil, err
	}
	es, err := embedded.Open(filepath.Join(dir, "paysvc.db"), embedded.WithClock(clock.System{}))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = es.Close() })
	return es, nil
}
