package workload

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"splitbrain/history"
)

func TestClientRecordsExtend(t *testing.T) {
	for _, tc := range []struct {
		name        string
		extendErr   error
		want        history.Type
		wantProcess string
	}{
		{"extended", nil, history.OK, "c1"},
		{"not extended", errors.Join(ErrNotExtended, errors.New("1 of 5")), history.Fail, "c1"},
		{"outcome unknown", errors.New("timeout"), history.Info, "c1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			rec := history.NewRecorder(&buf, time.Now())
			c := NewClient("c1", &fakeLock{extendErr: tc.extendErr}, rec)
			ctx := context.Background()
			if err := c.Extend(ctx, "k", time.Minute); err != nil {
				t.Fatalf("Extend without a lease: %v, want a no-op", err)
			}
			_ = c.Acquire(ctx, "k", time.Second)
			before := c.leases["k"].Deadline
			err := c.Extend(ctx, "k", time.Minute)
			if (err == nil) != (tc.extendErr == nil) {
				t.Fatalf("Extend error = %v, want %v", err, tc.extendErr)
			}
			if !c.Holds("k") {
				t.Error("a failed extension dropped the lease: the client still holds it until its deadline")
			}
			if extended := c.leases["k"].Deadline.After(before); extended != (tc.want == history.OK) {
				t.Errorf("lease deadline moved: %v, want %v", extended, tc.want == history.OK)
			}
			events, err := history.Parse(&buf, "mem")
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 4 {
				t.Fatalf("recorded %d events, want acquire invoke/ok and extend invoke/outcome", len(events))
			}
			inv, out := events[2], events[3]
			if inv.F != history.Extend || inv.Type != history.Invoke || out.F != history.Extend || out.Type != tc.want {
				t.Fatalf("extend recorded as %s %s / %s %s, want invoke / %s", inv.F, inv.Type, out.F, out.Type, tc.want)
			}
			if inv.TTL != int64(time.Minute) {
				t.Errorf("extend invoke records TTL %d, want the %d asked for", inv.TTL, int64(time.Minute))
			}
			if out.StringValue() != "v-k" {
				t.Errorf("extend outcome value %q, want the lease's value", out.StringValue())
			}
			if tc.want == history.OK && (out.Deadline == nil || *out.Deadline <= *events[1].Deadline) {
				t.Errorf("extend ok event has deadline %v, want later than the acquire's %v", out.Deadline, *events[1].Deadline)
			}
			if tc.want != history.OK && out.Err == "" {
				t.Error("failed extension recorded without its error")
			}
			if c.process != tc.wantProcess {
				t.Errorf("process %q, want %q", c.process, tc.wantProcess)
			}
		})
	}
}
