package runner

import (
	"reflect"
	"testing"

	"splitbrain/history"
)

func TestSidesLinksCutOnlyBetweenSides(t *testing.T) {
	t.Parallel()
	all := []history.Link{
		{Client: "c1", Node: "n1"}, {Client: "c1", Node: "r1"}, {Client: "s1", Node: "s2"},
		{Client: "s2", Node: "n1"}, {Client: "r1", Node: "n1"}, {Client: "c2", Node: "storage"},
	}
	tests := []struct {
		name  string
		sides [][]string
		want  []history.Link
	}{
		{"master with one sentinel", [][]string{{"n1", "s1", "c1"}, {"r1", "s2", "c2"}},
			[]history.Link{{Client: "c1", Node: "r1"}, {Client: "s1", Node: "s2"}, {Client: "s2", Node: "n1"}, {Client: "r1", Node: "n1"}}},
		// A name on no side (storage) keeps its links.
		{"unnamed ends untouched", [][]string{{"c1"}, {"n1"}}, []history.Link{{Client: "c1", Node: "n1"}}},
		{"one side cuts nothing", [][]string{{"c1", "n1"}, {"s9"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sidesLinks(all, tt.sides); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sidesLinks = %v, want %v", got, tt.want)
			}
		})
	}
}
