package pages_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"splitbrain/checker"
	"splitbrain/pages"
	"splitbrain/runstore"
)

// Porcupine's page builds its tooltips as HTML from an operation's
// metadata and the model's states, and its own script needs
// 'unsafe-inline'. A history with markup in every place the reader still
// lets free text in (keys, lock values, leases, bank accounts, errors,
// fault kinds, details and node names) gives a page that runs none of it:
// every operation and annotation is hovered and clicked, and the markup
// shows in the tooltips as text.
func TestPorcupinePageRunsNoScriptInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	events, err := pages.EvilBankHistory()
	if err != nil {
		t.Fatalf("the reader refused the hostile history: %v", err)
	}
	res := checker.Check(events)
	if res.Verdict != checker.Invalid || res.Visualized != checker.PropBank {
		t.Fatalf("fixture: %s, visualized %q: %s", res.Verdict, res.Visualized, res.Reason)
	}
	dir := t.TempDir()
	if err := pages.Write(dir, pages.EvilMeta(), events, res); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, runstore.PorcupineFile)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}

	p := open(t, ctx, b, path, 1400, 900, false)
	if err := p.WaitFor(ctx, `document.querySelectorAll(".target-rect").length > 0`); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Alerted, Targets int
		Tips             []string
	}
	if err := p.Eval(ctx, `(async () => {
	  const tip = document.querySelector("#canvas .tooltip");
	  const targets = [...document.querySelectorAll(".target-rect")];
	  const tips = [];
	  const hover = (r) => {
	    const box = r.getBoundingClientRect();
	    const at = {bubbles: true, clientX: box.x + 1, clientY: box.y + 1};
	    r.dispatchEvent(new MouseEvent("mouseover", at));
	    r.dispatchEvent(new MouseEvent("mousemove", at));
	    tips.push(tip.innerHTML);
	  };
	  for (const r of targets) {
	    hover(r);
	    r.dispatchEvent(new MouseEvent("mouseout", {bubbles: true}));
	  }
	  // Selected, a tooltip shows the selected operation's linearization.
	  for (const r of targets) {
	    r.dispatchEvent(new MouseEvent("click", {bubbles: true}));
	    for (const other of targets) { hover(other); }
	    r.dispatchEvent(new MouseEvent("click", {bubbles: true}));
	  }
	  // An image that fails to load reports it a moment later.
	  await new Promise((done) => setTimeout(done, 500));
	  return {Alerted: window.alerted || 0, Targets: targets.length, Tips: tips};
	})()`, &got); err != nil {
		t.Fatal(err)
	}
	if got.Alerted != 0 {
		t.Errorf("hostile text ran in porcupine's page: alert called %d times", got.Alerted)
	}
	if got.Targets < 4 {
		t.Errorf("only %d operations and annotations to hover", got.Targets)
	}
	// The accounts reach the tooltips (the bank's operations carry them),
	// as text.
	all := strings.Join(got.Tips, "\n")
	// innerHTML gives text back with only &, < and > escaped.
	asText := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(pages.EvilAcct)
	if !strings.Contains(all, asText) {
		t.Errorf("no tooltip shows the account %q as text; tooltips:\n%s", pages.EvilAcct, all)
	}
	if strings.Contains(all, "<img") || strings.Contains(all, "<svg") {
		t.Errorf("a tooltip holds markup from the history:\n%s", all)
	}
}
