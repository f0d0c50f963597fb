package lease

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func TestSplitQuiescent(t *testing.T) {
	op := func(kind MutexOp, c string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: MutexInput{Op: kind, Client: c, Key: "k"}, Call: call, Return: ret}
	}
	tests := []struct {
		name  string
		ops   []porcupine.Operation
		parts int
	}{
		{"two separate leases", []porcupine.Operation{
			op(OpAcquire, "c1", 0, 1), op(OpExpire, "c1", 5, 5),
			op(OpAcquire, "c2", 6, 7), op(OpExpire, "c2", 9, 9)}, 2},
		{"second acquire called while the first lease is held", []porcupine.Operation{
			op(OpAcquire, "c1", 0, 1), op(OpAcquire, "c2", 3, 7),
			op(OpExpire, "c1", 5, 5), op(OpExpire, "c2", 9, 9)}, 1},
		{"touching at an instant is not quiescent", []porcupine.Operation{
			op(OpAcquire, "c1", 0, 1), op(OpExpire, "c1", 5, 5),
			op(OpAcquire, "c2", 5, 7), op(OpExpire, "c2", 9, 9)}, 1},
		{"lease never expires", []porcupine.Operation{
			op(OpAcquire, "c1", 0, 1), op(OpAcquire, "c2", 6, 7)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(splitQuiescent(tt.ops)); got != tt.parts {
				t.Errorf("%d parts, want %d", got, tt.parts)
			}
		})
	}
}

func TestMutexModelRejectsForeignValues(t *testing.T) {
	m := MutexModel()
	if ok, _ := m.Step(42, MutexInput{Op: OpAcquire, Client: "c1"}, nil); ok {
		t.Error("step accepted a non-string state")
	}
	if ok, _ := m.Step("", "acquire", nil); ok {
		t.Error("step accepted a non-MutexInput input")
	}
	ok, s := m.Step("", MutexInput{Op: OpAcquire, Client: "c1"}, nil)
	if !ok || s != "c1" {
		t.Errorf("acquire on free = %v, %v", ok, s)
	}
	if ok, _ := m.Step("c1", MutexInput{Op: OpExpire, Client: "c2"}, nil); ok {
		t.Error("c2 expired c1's lock")
	}
}
