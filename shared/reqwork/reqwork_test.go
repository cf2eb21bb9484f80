package reqwork

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestGoWithoutGroupRunsAtOnce(t *testing.T) {
	ran := false
	Go(context.Background(), func(context.Context) { ran = true })
	if !ran {
		t.Fatal("not run synchronously")
	}
}

func TestWaitWaitsForAll(t *testing.T) {
	ctx, g := With(context.Background())
	var n atomic.Int32
	release := make(chan struct{})
	for i := 0; i < 10; i++ {
		Go(ctx, func(ctx context.Context) {
			<-release
			if ctx.Err() == nil {
				n.Add(1)
			}
		})
	}
	close(release)
	g.Wait()
	if n.Load() != 10 {
		t.Fatalf("%d of 10 done", n.Load())
	}
}

func TestWorkOutlivesCancellation(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, g := With(parent)
	cancel()
	var err error
	Go(ctx, func(ctx context.Context) { err = ctx.Err() })
	g.Wait()
	if err != nil {
		t.Fatal("work context cancelled with the request")
	}
}
