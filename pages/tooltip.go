package pages

// Tooltip text of the timeline's and the charts' shapes.

import (
	"encoding/json"
	"fmt"
	"strings"

	"splitbrain/checker"
)

func beliefTitle(b checker.Belief, events eventIndex) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s believed it held %q from %s to %s (%s)", b.Client, b.Key,
		checker.Seconds(b.Start), checker.Seconds(b.End), checker.EndText(b.EndReason))
	fmt.Fprintf(&sb, "\nacquire invoked at %s, granted at %s", checker.Seconds(b.Invoke), checker.Seconds(b.Start))
	if len(b.Nodes) > 0 {
		fmt.Fprintf(&sb, " by %s", strings.Join(b.Nodes, ","))
	}
	if b.Deadline != nil {
		fmt.Fprintf(&sb, "\nvalidity deadline %s", checker.Seconds(*b.Deadline))
	}
	if b.Token != nil {
		fmt.Fprintf(&sb, "\nfencing token %d", *b.Token)
	}
	if b.Extended > 0 {
		fmt.Fprintf(&sb, "\nextended %d time(s)", b.Extended)
	}
	writeEvents(&sb, events, b.InvokeIndex, b.OKIndex, b.EndIndex)
	return sb.String()
}

func attemptTitle(a checker.Attempt, events eventIndex) string {
	var sb strings.Builder
	what := map[string]string{"fail": "failed", "info": "outcome unknown", checker.OutcomePending: "never completed"}[a.Outcome]
	fmt.Fprintf(&sb, "%s acquire %q %s: %s–%s", a.Client, a.Key, what, checker.Seconds(a.Invoke), checker.Seconds(a.End))
	if a.Err != "" {
		sb.WriteString("\n" + a.Err)
	}
	writeEvents(&sb, events, a.InvokeIndex, a.EndIndex)
	return sb.String()
}

func resourceTitle(r resourceOp, events eventIndex) string {
	var sb strings.Builder
	sb.WriteString(opSentence(r))
	if r.finding != "" {
		sb.WriteString("\n" + r.finding)
	}
	end := int64(-1)
	if r.Done() {
		end = r.Completion.Index
	}
	writeEvents(&sb, events, r.Invoke.Index, end)
	return sb.String()
}

// writeEvents appends the raw history lines, so a tooltip shows the full op.
func writeEvents(sb *strings.Builder, events eventIndex, indexes ...int64) {
	for _, i := range indexes {
		if i < 0 {
			continue
		}
		e, ok := events.get(i)
		if !ok {
			continue
		}
		if b, err := json.Marshal(e); err == nil {
			sb.WriteString("\n")
			sb.Write(b)
		}
	}
}

func faultTitle(f checker.FaultWindow) string {
	s := fmt.Sprintf("%s from %s", f.Label(), checker.Seconds(f.Start))
	if f.Healed {
		s += " to " + checker.Seconds(f.End)
	} else {
		s += ", never healed"
	}
	if f.Detail != "" {
		s += "\n" + f.Detail
	}
	return s
}
