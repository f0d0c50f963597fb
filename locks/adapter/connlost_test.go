package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// connLost decides whether wait-replicas asks INFO again: only for a
// connection lost under the command, never for a timeout or an answer.
func TestConnLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EOF", io.EOF, true},
		{"wrapped EOF", fmt.Errorf("read: %w", io.EOF), true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{"timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, false},
		{"context", context.DeadlineExceeded, false},
		{"server error", errors.New("NOAUTH Authentication required."), false},
	} {
		if got := connLost(tc.err); got != tc.want {
			t.Errorf("%s: connLost(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
