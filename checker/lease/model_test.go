package lease

import (
	"math/rand/v2"
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

// Leaving the pieces of one acquire out of porcupine's search changes no
// outcome: on random belief intervals — a client's one after another,
// clients overlapping now and then, ends touching, zero-length beliefs,
// beliefs held to the end — porcupine says of what searched keeps what it
// says of the whole. The histories include both outcomes and pieces left
// out, so the comparison is not empty.
func TestSearchedAgreesWithPorcupine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	model := MutexModel()
	var illegal, ok, dropped int
	for range 5000 {
		var ops []porcupine.Operation
		clients := []string{"c1", "c2", "c3"}[:2+r.IntN(2)]
		for _, key := range []string{"k1", "k2"}[:1+r.IntN(2)] {
			for id, c := range clients {
				at := r.Int64N(4)
				for range r.IntN(4) {
					invoke := at
					start := invoke + r.Int64N(3)
					in := MutexInput{Op: OpAcquire, Client: c, Key: key}
					ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: invoke, Return: start})
					if r.IntN(8) == 0 {
						break // held to the end
					}
					end := start + r.Int64N(4)
					in.Op = OpExpire
					ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: end, Return: end})
					at = end + r.Int64N(6)
				}
			}
		}
		r.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		whole := porcupine.CheckOperations(model, append([]porcupine.Operation(nil), ops...))
		kept := searched(append([]porcupine.Operation(nil), ops...))
		if got := porcupine.CheckOperations(model, kept); got != whole {
			t.Fatalf("porcupine says %v of the whole, %v of the %d operations searched kept:\n%v\nkept:\n%v", whole, got, len(kept), ops, kept)
		}
		if whole {
			ok++
		} else {
			illegal++
		}
		if len(kept) < len(ops) {
			dropped++
		}
	}
	t.Logf("%d linearizable, %d not; %d with pieces left out", ok, illegal, dropped)
	if ok == 0 || illegal == 0 || dropped == 0 {
		t.Errorf("the histories do not cover both outcomes and pieces left out: %d, %d, %d", ok, illegal, dropped)
	}
}
