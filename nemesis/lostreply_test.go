package nemesis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"splitbrain/fault"
	"splitbrain/history"
	"splitbrain/nemesis"
)

// A lost reply: the request goes through and takes effect, its reply
// never comes (the client times out), and the client's retry meets its
// own effect — a SET NX refused by the key it set itself. Only the first
// reply after the injection is lost; the retry's reply comes back.
func TestLoseReplyLosesOneReplyAndTheEffectStays(t *testing.T) {
	cl, links, nem, rec := setup(t, 1, "c1")
	n1 := cl.Processes()[0]
	ctx := context.Background()
	c := linkClient(t, links, cl.Password(), "c1", "n1")
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	link := []history.Link{{Client: "c1", Node: "n1"}}
	id, err := nem.Start(ctx, nemesis.LoseReply{Net: links, Links: link})
	if err != nil {
		t.Fatal(err)
	}
	setNX := func() (bool, error) {
		ctx, cancel := within(500 * time.Millisecond)
		defer cancel()
		return c.SetNX(ctx, "lock", "mine", time.Minute).Result()
	}
	if _, err := setNX(); !isTimeout(err) {
		t.Fatalf("SET NX with its reply lost: %v, want a timeout", err)
	}
	if v := n1.Admin().Get(ctx, "lock").Val(); v != "mine" {
		t.Fatalf("after the lost reply the node holds %q, want the client's own SET to have taken effect", v)
	}
	// The retry: a new connection (go-redis drops one that timed out),
	// whose reply comes back, refusing the lock the client itself holds.
	set, err := setNX()
	if err != nil || set {
		t.Errorf("the retried SET NX: set %v, %v; want refused by the client's own key", set, err)
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "after", "v", 0).Err(); err != nil {
		t.Errorf("SET after the heal: %v", err)
	}
	fs := rec.faults(t)
	if len(fs) != 2 || fs[0].Kind != fault.KindLostReply || len(fs[0].Links) != 1 {
		t.Errorf("recorded %+v, want one lost-reply", fs)
	}
}

// Healed before any reply came, the fault loses nothing; a connection
// that lost its reply is closed by the heal, never left to hand a later
// reply to the wrong request.
func TestLoseReplyHeal(t *testing.T) {
	cl, links, nem, _ := setup(t, 1, "c1", "c2")
	ctx := context.Background()
	c1 := linkClient(t, links, cl.Password(), "c1", "n1")
	id, err := nem.Start(ctx, nemesis.LoseReply{Net: links, Links: []history.Link{{Client: "c1", Node: "n1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c1.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after a heal before any reply: %v", err)
	}
	// A raw connection (no client-side timeout to close it) loses its
	// reply, and the heal closes it.
	c2 := linkClient(t, links, cl.Password(), "c2", "n1")
	conn := c2.Conn()
	defer conn.Close()
	if err := conn.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	id, err = nem.Start(ctx, nemesis.LoseReply{Net: links, Links: []history.Link{{Client: "c2", Node: "n1"}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- conn.Ping(context.Background()).Err() }()
	select {
	case err := <-done:
		t.Fatalf("PING answered (%v) with its reply lost", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := nem.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || errors.Is(err, redis.Nil) {
			t.Errorf("the connection that lost its reply answered %v after the heal, want it closed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection that lost its reply still hangs after the heal")
	}
}
