package work

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFlightOneRunForAll: of many callers at once, one runs the work and
// the rest wait for it; when it fails, its error reaches every waiter (no
// waiter runs the work again).
func TestFlightOneRunForAll(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		var f Flight
		var runs, yields atomic.Int32
		var done atomic.Bool
		release := make(chan struct{})
		boom := errors.New("boom")
		work := func() error {
			runs.Add(1)
			<-release
			if fail {
				return boom
			}
			done.Store(true)
			return nil
		}
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f.Do(context.Background(), done.Load, func() { yields.Add(1) }, work)
			}()
		}
		for runs.Load() == 0 || yields.Load() < int32(len(errs)-1) {
			time.Sleep(time.Millisecond)
		}
		close(release)
		wg.Wait()
		if runs.Load() != 1 {
			t.Fatalf("fail %v: %d runs, want 1", fail, runs.Load())
		}
		for i, err := range errs {
			if fail && !errors.Is(err, boom) || !fail && err != nil {
				t.Fatalf("fail %v: caller %d got %v", fail, i, err)
			}
		}
	}
}

// TestFlightWaiterGivesUp: a waiter's context ends its wait; the run goes
// on, and a later caller finds the work done.
func TestFlightWaiterGivesUp(t *testing.T) {
	t.Parallel()
	var f Flight
	var done atomic.Bool
	release, started := make(chan struct{}), make(chan struct{})
	go func() {
		_ = f.Do(context.Background(), done.Load, nil, func() error {
			close(started)
			<-release
			done.Store(true)
			return nil
		})
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := f.Do(ctx, done.Load, nil, func() error { t.Fatal("a second run"); return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter: %v", err)
	}
	close(release)
	for !done.Load() {
		time.Sleep(time.Millisecond)
	}
	if err := f.Do(context.Background(), done.Load, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestFlightLeaderAbandons: a run that fails because its leader's ctx
// ended does not fail a waiter whose own ctx is alive: the waiter leads
// the work again and succeeds. A waiter whose ctx ended too gets the
// error.
func TestFlightLeaderAbandons(t *testing.T) {
	t.Parallel()
	var f Flight
	var done atomic.Bool
	var runs atomic.Int32
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	started := make(chan struct{})
	leader := make(chan error, 1)
	go func() {
		leader <- f.Do(leaderCtx, done.Load, nil, func() error {
			runs.Add(1)
			close(started)
			<-leaderCtx.Done()
			return leaderCtx.Err() // as SQL interrupted by the leader's ctx fails
		})
	}()
	<-started
	waiter := make(chan error, 1)
	yielded := make(chan struct{})
	go func() {
		waiter <- f.Do(context.Background(), done.Load, func() { close(yielded) }, func() error {
			runs.Add(1)
			done.Store(true)
			return nil
		})
	}()
	<-yielded // the waiter waits on the leader's run
	cancelLeader()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v", err)
	}
	if err := <-waiter; err != nil {
		t.Fatalf("waiter with a live ctx failed with the leader's cancellation: %v", err)
	}
	if runs.Load() != 2 || !done.Load() {
		t.Fatalf("%d runs, done %v: want the waiter to lead a second run", runs.Load(), done.Load())
	}
}

// TestFlightLeaderPanics: a leader's panic ends the run (waiters get a
// *PanicError) and goes on up the leader's goroutine.
func TestFlightLeaderPanics(t *testing.T) {
	t.Parallel()
	var f Flight
	started, release := make(chan struct{}), make(chan struct{})
	waiter := make(chan error, 1)
	go func() {
		defer func() { _ = recover() }()
		_ = f.Do(context.Background(), func() bool { return false }, nil, func() error {
			close(started)
			<-release
			panic("app bug")
		})
	}()
	<-started
	yielded := make(chan struct{})
	go func() {
		waiter <- f.Do(context.Background(), func() bool { return false }, func() { close(yielded) }, nil)
	}()
	<-yielded // the waiter waits on the leader's run
	close(release)
	var pe *PanicError
	if err := <-waiter; !errors.As(err, &pe) || pe.Value != "app bug" {
		t.Fatalf("waiter: %v", err)
	}
}

// TestLifeClose: Close waits for work in progress but not for parked work;
// final runs once, after the last work leaves, also when Close stopped
// waiting; Enter fails once closing began.
func TestLifeClose(t *testing.T) {
	t.Parallel()
	var l Life
	for range 2 {
		if !l.Enter() {
			t.Fatal("Enter before Close")
		}
	}
	l.Park(1) // one is inside a callback
	var finals atomic.Int32
	closed := make(chan error, 1)
	go func() { closed <- l.Close(context.Background(), func() { finals.Add(1) }) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned with unparked work in progress: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	if l.Enter() {
		t.Fatal("Enter after Close began")
	}
	l.Leave() // the unparked one
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if finals.Load() != 0 {
		t.Fatal("final ran with parked work left")
	}
	l.Park(-1)
	l.Leave()
	for finals.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
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
	l.Enter()
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
	l.Leave()
	<-ran
}

// TestPending: one run serves every ask before it starts; Wait's channel
// closes when the last run is done, and at once after Release.
func TestPending(t *testing.T) {
	t.Parallel()
	var p Pending
	if p.Wait() != nil || p.Busy() {
		t.Fatal("pending with nothing asked")
	}
	if !p.Ask() || p.Ask() || p.Ask() {
		t.Fatal("asks before a start: want one run queued")
	}
	ch := p.Wait()
	p.Start()
	if !p.Ask() { // asked again while running: a second run
		t.Fatal("ask after a start queued nothing")
	}
	p.Done()
	select {
	case <-ch:
		t.Fatal("idle with a run still pending")
	default:
	}
	p.Start()
	p.Done()
	<-ch
	p.Ask()
	ch = p.Wait()
	p.Release()
	<-ch
	if p.Busy() {
		t.Fatal("busy after Release")
	}
}

// TestLifeIdle: Idle waits for work in progress (not parked work), and
// work enters again afterwards.
func TestLifeIdle(t *testing.T) {
	t.Parallel()
	var l Life
	l.Enter()
	l.Enter()
	l.Park(1)
	idle := make(chan error, 1)
	go func() { idle <- l.Idle(context.Background()) }()
	select {
	case <-idle:
		t.Fatal("idle with unparked work in progress")
	case <-time.After(10 * time.Millisecond):
	}
	l.Leave()
	if err := <-idle; err != nil {
		t.Fatal(err)
	}
	if !l.Enter() {
		t.Fatal("Enter after Idle")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := l.Idle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Idle with work in progress: %v", err)
	}
}

// TestLifeIdleOutlivesNoCall: Idle waits for the calls that entered
// before it began, not for those that keep entering after: with a call
// always in progress (each new one entering before the last leaves), it
// returns once the first has left.
func TestLifeIdleOutlivesNoCall(t *testing.T) {
	t.Parallel()
	var l Life
	first, ok := l.EnterCall()
	if !ok {
		t.Fatal("EnterCall")
	}
	idle := make(chan error, 1)
	go func() { idle <- l.Idle(context.Background()) }()
	// Idle has begun once a call entering now is of a later era.
	var next Call
	for {
		if next, ok = l.EnterCall(); !ok {
			t.Fatal("EnterCall")
		}
		if next.era != first.era {
			break
		}
		l.LeaveCall(next)
		runtime.Gosched()
	}
	select {
	case <-idle:
		t.Fatal("idle with a call of its era in progress")
	case <-time.After(10 * time.Millisecond):
	}
	l.LeaveCall(first) // the later call stays in progress
	if err := <-idle; err != nil {
		t.Fatal(err)
	}
	// Close waits for every call, whatever its era.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := l.Close(ctx, func() {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a call in progress: %v", err)
	}
	l.LeaveCall(next)
}
