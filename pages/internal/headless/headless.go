// Package headless drives a headless Chromium over the DevTools protocol on
// a pipe (--remote-debugging-pipe), so tests can load a report in a real
// browser, ask the rendered DOM questions and take screenshots. Nothing
// listens on a port.
package headless

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotFound is returned by Find when no Chromium is installed.
var ErrNotFound = errors.New("headless: no chromium found (set CHROMIUM, or install Debian's chromium package)")

// Find returns the Chromium to use: $CHROMIUM, else the first of chromium,
// chromium-browser, google-chrome on PATH.
func Find() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("headless: CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Flags are the command-line flags every browser is started with.
var Flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
	"--remote-debugging-pipe",
}

// Browser is one Chromium process.
type Browser struct {
	cmd      *exec.Cmd
	toChrome *os.File
	msgs     chan message
	readErr  chan error
	done     chan struct{}
	profile  string

	mu     sync.Mutex
	nextID int
	// events received while waiting for something else.
	events []message
	stderr *limitedWriter
}

type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Start launches Chromium at path. Close must be called.
func Start(ctx context.Context, path string) (*Browser, error) {
	profile, err := os.MkdirTemp("", "splitbrain-chromium-")
	if err != nil {
		return nil, fmt.Errorf("headless: %w", err)
	}
	chromeIn, toChrome, err := os.Pipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("headless: %w", err)
	}
	fromChrome, chromeOut, err := os.Pipe()
	if err != nil {
		chromeIn.Close()
		toChrome.Close()
		os.RemoveAll(profile)
		return nil, fmt.Errorf("headless: %w", err)
	}
	args := append(append([]string(nil), Flags...), "--user-data-dir="+profile, "about:blank")
	cmd := exec.Command(path, args...)
	// The protocol runs on fds 3 (Chromium reads) and 4 (Chromium writes).
	cmd.ExtraFiles = []*os.File{chromeIn, chromeOut}
	// Its own process group, so Close can end every helper process it
	// forked, and nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b := &Browser{cmd: cmd, toChrome: toChrome, msgs: make(chan message, 64), readErr: make(chan error, 1), done: make(chan struct{}),
		profile: profile, stderr: &limitedWriter{max: 8 << 10}}
	cmd.Stderr = b.stderr
	if err := cmd.Start(); err != nil {
		chromeIn.Close()
		chromeOut.Close()
		toChrome.Close()
		fromChrome.Close()
		os.RemoveAll(profile)
		return nil, fmt.Errorf("headless: starting %s: %w", path, err)
	}
	chromeIn.Close()
	chromeOut.Close()
	go b.read(fromChrome)
	// The browser answers once it is up.
	if _, err := b.call(ctx, "", "Browser.getVersion", nil); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// limitedWriter keeps the first max bytes of the browser's stderr for
// error messages.
type limitedWriter struct {
	mu  sync.Mutex
	b   strings.Builder
	max int
}

func (w *limitedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *Browser) read(f *os.File) {
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			b.readErr <- fmt.Errorf("headless: browser closed the pipe: %w", err)
			close(b.msgs)
			return
		}
		var m message
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue
		}
		select {
		case b.msgs <- m:
		case <-b.done:
			return
		}
	}
}

// call sends one command and waits for its answer; events that arrive
// meanwhile are kept for waitEvent.
func (b *Browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	id := b.nextID
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if session != "" {
		req["sessionId"] = session
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("headless: %s: %w", method, err)
	}
	if _, err := b.toChrome.Write(append(raw, 0)); err != nil {
		return nil, fmt.Errorf("headless: %s: %w", method, err)
	}
	for {
		m, err := b.next(ctx)
		if err != nil {
			return nil, fmt.Errorf("headless: %s: %w", method, err)
		}
		if m.ID != id {
			if m.Method != "" {
				b.events = append(b.events, m)
			}
			continue
		}
		if m.Error != nil {
			return nil, fmt.Errorf("headless: %s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		return m.Result, nil
	}
}

func (b *Browser) next(ctx context.Context) (message, error) {
	select {
	case m, ok := <-b.msgs:
		if !ok {
			err := <-b.readErr
			b.readErr <- err
			return message{}, fmt.Errorf("%w; stderr: %s", err, b.stderr.String())
		}
		return m, nil
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// waitEvent waits for an event of one session.
func (b *Browser) waitEvent(ctx context.Context, session, method string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, m := range b.events {
		if m.Method == method && m.SessionID == session {
			b.events = append(b.events[:i], b.events[i+1:]...)
			return nil
		}
	}
	for {
		m, err := b.next(ctx)
		if err != nil {
			return fmt.Errorf("headless: waiting for %s: %w", method, err)
		}
		if m.Method == method && m.SessionID == session {
			return nil
		}
		if m.Method != "" {
			b.events = append(b.events, m)
		}
	}
}

// Close asks the browser to quit, ends its process group if it does not,
// and removes its profile.
func (b *Browser) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = b.call(ctx, "", "Browser.close", nil)
	close(b.done)
	b.toChrome.Close()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	// Helpers (renderer, zygote) share the group; none may outlive the
	// browser.
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	return os.RemoveAll(b.profile)
}

// Page is one tab.
type Page struct {
	b       *Browser
	session string
}

// NewPage opens a tab with a viewport of width×height CSS pixels.
func (b *Browser) NewPage(ctx context.Context, width, height int) (*Page, error) {
	raw, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := json.Unmarshal(raw, &target); err != nil {
		return nil, fmt.Errorf("headless: createTarget: %w", err)
	}
	raw, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &attached); err != nil {
		return nil, fmt.Errorf("headless: attachToTarget: %w", err)
	}
	p := &Page{b: b, session: attached.SessionID}
	if _, err := b.call(ctx, p.session, "Page.enable", nil); err != nil {
		return nil, err
	}
	if err := p.SetViewport(ctx, width, height); err != nil {
		return nil, err
	}
	return p, nil
}

// SetViewport resizes the tab.
func (p *Page) SetViewport(ctx context.Context, width, height int) error {
	_, err := p.b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false})
	return err
}

// OnNewDocument runs script in every document the page loads, before the
// document's own scripts.
func (p *Page) OnNewDocument(ctx context.Context, script string) error {
	_, err := p.b.call(ctx, p.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": script})
	return err
}

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(ctx context.Context, url string) error {
	raw, err := p.b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return err
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := json.Unmarshal(raw, &nav); err == nil && nav.ErrorText != "" {
		return fmt.Errorf("headless: navigating to %s: %s", url, nav.ErrorText)
	}
	return p.b.waitEvent(ctx, p.session, "Page.loadEventFired")
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its JSON-able value into out.
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	raw, err := p.b.call(ctx, p.session, "Runtime.evaluate",
		map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return err
	}
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("headless: evaluate: %w", err)
	}
	if res.Exception != nil {
		return fmt.Errorf("headless: evaluate %q: %s %s", expr, res.Exception.Text, res.Exception.Exception.Description)
	}
	if out == nil {
		return nil
	}
	if len(res.Result.Value) == 0 {
		return fmt.Errorf("headless: evaluate %q: no value", expr)
	}
	return json.Unmarshal(res.Result.Value, out)
}

// WaitFor polls a boolean expression until it is true.
func (p *Page) WaitFor(ctx context.Context, expr string) error {
	for {
		var ok bool
		if err := p.Eval(ctx, "!!("+expr+")", &ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("headless: waiting for %s: %w", expr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Screenshot captures the page as PNG: the viewport, or with full set the
// whole document at the viewport's width.
func (p *Page) Screenshot(ctx context.Context, full bool) ([]byte, error) {
	if !full {
		return p.capture(ctx, map[string]any{"format": "png"})
	}
	var size struct{ W, H float64 }
	if err := p.Eval(ctx, `({W: document.documentElement.scrollWidth, H: document.documentElement.scrollHeight})`, &size); err != nil {
		return nil, err
	}
	return p.ScreenshotClip(ctx, 0, 0, size.W, size.H)
}

// ScreenshotClip captures a rectangle of the document (CSS pixels from its
// top left corner) as PNG.
func (p *Page) ScreenshotClip(ctx context.Context, x, y, w, h float64) ([]byte, error) {
	return p.capture(ctx, map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": x, "y": y, "width": w, "height": h, "scale": 1}})
}

func (p *Page) capture(ctx context.Context, params map[string]any) ([]byte, error) {
	raw, err := p.b.call(ctx, p.session, "Page.captureScreenshot", params)
	if err != nil {
		return nil, err
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &shot); err != nil {
		return nil, fmt.Errorf("headless: screenshot: %w", err)
	}
	return base64.StdEncoding.DecodeString(shot.Data)
}
