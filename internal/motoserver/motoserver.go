// Package motoserver runs moto_server, an AWS-wire-protocol server, for the
// tests of the AWS adapters and for the bench command (never hand-written
// fakes of the SDK). shared/testutil/moto ties it to a test.
//
// Endpoint returns $PAYSVC_TEST_AWS_ENDPOINT when set (a server started by
// CI, e.g. .ci/run). Otherwise the first call starts one `moto_server`
// process for the whole process, on 127.0.0.1 and a free port; Stop kills
// it. A missing moto_server is an error, never a skip.
package motoserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// EnvEndpoint names the variable that points tests at a running server.
const EnvEndpoint = "PAYSVC_TEST_AWS_ENDPOINT"

// Region is the region every test client uses.
const Region = "us-east-1"

const (
	// startTimeout only bounds a failure to start: generous, since a
	// Python server starts slowly on a loaded machine.
	startTimeout  = 120 * time.Second
	pollInterval  = 50 * time.Millisecond
	startAttempts = 3
)

// server is the moto_server process shared by the test binary.
type server struct {
	once     sync.Once
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	endpoint string
	out      *tailBuffer // the server's output (its last 16 KB)
	err      error
}

// shared is the one moto_server of this process; second, another one
// (Second).
var shared, second server

// Endpoint returns the URL of a moto server, starting one if needed.
func Endpoint() (string, error) {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return ep, nil
	}
	return shared.url()
}

// Second returns the URL of a second moto server of this process, started
// on first use whatever $PAYSVC_TEST_AWS_ENDPOINT says: moto serves one
// call at a time on one core, so a test that keeps a server busy spreads
// its work over both.
func Second() (string, error) { return second.url() }

// url is s's URL, s started on first use.
func (s *server) url() (string, error) {
	s.once.Do(s.start)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", fmt.Errorf("moto: %w", s.err)
	}
	if s.cmd == nil {
		return "", errors.New("moto: server already stopped (Stop was called before)")
	}
	return s.endpoint, nil
}

// Stop kills the moto_servers started by Endpoint and Second, if any. It
// is safe to call more than once and when no server was started.
func Stop() {
	for _, s := range []*server{&shared, &second} {
		s.stop()
	}
}

func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	killGroup(s.cmd)
	<-s.exited
	s.cmd = nil
}

// start launches moto_server and waits until it answers.
func (s *server) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		s.err = fmt.Errorf("moto_server is not on PATH (install it with `pip install 'moto[server]'`, "+
			"or set %s to a running AWS-compatible endpoint): %w", EnvEndpoint, err)
		return
	}
	for range startAttempts {
		s.err = s.launch(bin)
		if s.err == nil {
			return
		}
	}
}

// launch starts one moto_server on a port the kernel picks (-p 0) and
// waits until it answers there. The port is read from the server's own
// "Running on" line: a port probed free and passed in can be taken by
// another process before the server binds it, and a server that then
// failed to bind would look ready when the other one answered.
func (s *server) launch(bin string) error {
	out := &tailBuffer{max: 16 << 10, want: runningOn, found: make(chan string, 1)}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", "0")
	cmd.Stdout, cmd.Stderr = out, out
	if os.Getenv(EnvSpeedups) != "off" {
		if dir, err := speedupsDir(); err == nil {
			cmd.Env = withPythonPath(os.Environ(), dir)
		} else {
			fmt.Fprintf(os.Stderr, "motoserver: moto runs without its speed-ups: %v\n", err)
		}
	}
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	fail := func(err error) error {
		killGroup(cmd)
		<-exited
		return fmt.Errorf("moto_server: %w; output:\n%s", err, out)
	}
	var endpoint string
	select {
	case endpoint = <-out.found:
	case <-exited:
		return fail(errors.New("exited before saying where it listens"))
	case <-time.After(startTimeout):
		return fail(fmt.Errorf("did not say where it listens within %s", startTimeout))
	}
	if err := waitReady(endpoint, exited); err != nil {
		return fail(fmt.Errorf("on %s: %w", endpoint, err))
	}
	s.cmd, s.exited, s.endpoint, s.out = cmd, exited, endpoint, out
	return nil
}

// runningOn is the line in which moto_server (werkzeug) names the address
// it listens on.
var runningOn = regexp.MustCompile(`Running on (http://127\.0\.0\.1:[0-9]+)`)

// waitReady polls endpoint until it answers HTTP, the process exits, or
// startTimeout passes.
func waitReady(endpoint string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/moto-api/", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before answering")
		case <-ctx.Done():
			return fmt.Errorf("no answer within %s", startTimeout)
		case <-time.After(pollInterval):
		}
	}
}

// tailBuffer keeps the last max bytes written to it, for error messages,
// and sends on found the first submatch of want in what is written (lines
// are matched whole: a line's parts can come in separate writes).
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	want  *regexp.Regexp
	found chan string
	line  []byte // the line being written, until want matched
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	if b.want != nil {
		b.line = append(b.line, p...)
		for {
			i := bytes.IndexByte(b.line, '\n')
			if i < 0 {
				break
			}
			if m := b.want.FindSubmatch(b.line[:i]); m != nil {
				b.found <- string(m[1])
				b.want, b.line = nil, nil
				break
			}
			b.line = b.line[i+1:]
		}
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// DynamoClient returns a DynamoDB client for endpoint with static test
// credentials in Region.
//
// The client sends one request at a time (a single connection). moto checks
// a condition expression and then writes without a lock, so two concurrent
// conditional writes to one item can both succeed there — e.g. two UpdateItem
// calls that each create the missing item. DynamoDB applies every write to an
// item atomically; serialising requests gives tests that atomicity, while
// goroutines still interleave at request granularity exactly as they would
// against DynamoDB.
func DynamoClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient: HTTPClient(&http.Transport{
			MaxConnsPerHost:     1,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     30 * time.Second,
		}, 0),
		Retryer: loggedRetries{retry.NewStandard()},
	})
}

// loggedRetries is the SDK's standard retryer, saying on stderr each error
// after which it sends a call again (a failing test's output shows them):
// a write moto applied whose answer was lost comes back as a failed
// condition, which the stores must tell from a real conflict.
type loggedRetries struct{ aws.RetryerV2 }

func (r loggedRetries) IsErrorRetryable(err error) bool {
	ok := r.RetryerV2.IsErrorRetryable(err)
	if ok {
		fmt.Fprintf(os.Stderr, "motoserver: the SDK sends a call again after: %v\n", err)
	}
	return ok
}

// TableName returns a table name unique to this run: derived from name (so
// it is recognisable) plus random hex (so parallel tests and repeated runs
// against a shared server never collide).
func TableName(name string) (string, error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("moto: random table name: %w", err)
	}
	base := tableSafe(name)
	const maxBase = 200 // table names are at most 255 characters
	if len(base) > maxBase {
		base = base[len(base)-maxBase:]
	}
	return "t_" + base + "_" + hex.EncodeToString(rnd[:]), nil
}

// tableSafe replaces what a DynamoDB table name may not contain with '_'.
func tableSafe(s string) string {
	out := []byte(s)
	for i, c := range out {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			out[i] = '_'
		}
	}
	return string(out)
}

// EnvSpeedups=off starts moto_server without speedups (to compare).
const EnvSpeedups = "PAYSVC_MOTO_SPEEDUPS"

// speedups is the sitecustomize module moto_server loads from PYTHONPATH:
// two caches of work moto repeats for nothing (the file says which; neither
// changes an answer).
//
//go:embed speedups/sitecustomize.py
var speedups []byte

// speedupsDir returns a folder holding speedups as sitecustomize.py,
// written once per content (a temp folder named by its hash, shared by
// the test processes that run at once).
func speedupsDir() (string, error) {
	sum := sha256.Sum256(speedups)
	dir := filepath.Join(os.TempDir(), "paysvc-moto-speedups-"+hex.EncodeToString(sum[:6]))
	file := filepath.Join(dir, "sitecustomize.py")
	if b, err := os.ReadFile(file); err == nil && bytes.Equal(b, speedups) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "sitecustomize-*.tmp")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(speedups)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file) // whole, even with another process writing it too
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return dir, nil
}

// withPythonPath returns env with dir first on PYTHONPATH.
func withPythonPath(env []string, dir string) []string {
	const key = "PYTHONPATH="
	out := make([]string, 0, len(env)+1)
	path := dir
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, key); ok {
			if rest != "" {
				path += string(os.PathListSeparator) + rest
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+path)
}
