package work

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestLifeClose: Close waits for the work in progress; final runs once,
// after the last work leaves, also when Close stopped waiting; Enter fails
// once closing began.
func TestLifeClose(t *testing.T) {
	t.Parallel()
	var l Life
	a, _ := l.Enter()
	b, _ := l.Enter()
	var finals atomic.Int32
	closed := make(chan error, 1)
	go func() { closed <- l.Close(context.Background(), func() { finals.Add(1) }) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned with work in progress: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	if _, ok := l.Enter(); ok {
		t.Fatal("Enter after Close began")
	}
	l.Leave(a)
	l.Leave(b)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if finals.Load() != 1 {
		t.Fatalf("final ran %d times", finals.Load())
	}
	if err := l.Close(context.Background(), func() { finals.Add(1) }); err != nil || finals.Load() != 1 {
		t.Fatalf("a second Close: %v, final %d times", err, finals.Load())
	}
}

// TestLifeCloseGivesUp: Close's context bounds its wait; the last Leave
// then runs final.
func TestLifeCloseGivesUp(t *testing.T) {
	t.Parallel()
	var l Life
	tok, _ := l.Enter()
	ran := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := l.Close(ctx, func() { close(ran) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-ran:
		t.Fatal("final ran with work in progress")
	default:
	}
	l.Leave(tok)
	<-ran
}

// TestLifeIdle: Idle waits for the work that entered before it began, not
// for work that keeps entering after: with work always in progress (each
// new piece entering before the last leaves), it returns once the first
// has left; Close waits for every piece, whatever its era.
func TestLifeIdle(t *testing.T) {
	t.Parallel()
	var l Life
	first, ok := l.Enter()
	if !ok {
		t.Fatal("Enter")
	}
	idle := make(chan error, 1)
	go func() { idle <- l.Idle(context.Background()) }()
	var next Token
	for {
		if next, ok = l.Enter(); !ok {
			t.Fatal("Enter")
		}
		if next.era != first.era {
			break
		}
		l.Leave(next)
		runtime.Gosched()
	}
	select {
	case <-idle:
		t.Fatal("idle with work of its era in progress")
	case <-time.After(10 * time.Millisecond):
	}
	l.Leave(first)
	if err := <-idle; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := l.Close(ctx, func() {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with work in progress: %v", err)
	}
	l.Leave(next)
}
