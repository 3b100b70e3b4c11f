//go:build e2e

package httpapi_test

// The pages a person opens first, in a real browser: headless Chromium
// (Debian's chromium; CHROMIUM names another binary) drives GET /docs and
// GraphiQL against a real server. `make e2e` runs these tests (the e2e
// build tag keeps them out of make test, which needs no browser).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser is a headless Chromium of its own (a fresh profile, nothing
// fetched in the background) and what its pages reported: errors in
// their consoles, exceptions, Content-Security-Policy refusals, and every
// request they sent.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	requests []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exec := os.Getenv("CHROMIUM")
	if exec == "" {
		exec = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exec); err != nil {
		t.Fatalf("no Chromium at %s (apt-get install -y chromium, or set CHROMIUM): %v", exec, err)
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(exec), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true)}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute) // a hung browser fails the test, however slow the machine
	t.Cleanup(cancelTimeout)
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.problems = append(b.problems, "console error: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Text+" "+e.ExceptionDetails.URL)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				b.problems = append(b.problems, fmt.Sprintf("%s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		}
	})
	if err == nil {
		_, err = chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, network.Enable, network.EnableParams{})
	}
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// do runs actions in the browser, failing t with what the page says.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.screenshot(t, what)
		t.Fatalf("%s: %v; the page reported %q", what, err, b.reported())
	}
}

// value runs action in the browser and returns its value.
func value[T any](t *testing.T, b *browser, what string, action chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, action)
	if err != nil {
		b.screenshot(t, what)
		t.Fatalf("%s: %v; the page reported %q", what, err, b.reported())
	}
	return v
}

// reported is what the pages reported so far.
func (b *browser) reported() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// wantOnly fails t unless every request the pages sent went to origin,
// and none reported a problem, save those allowed says are expected.
func (b *browser) wantOnly(t *testing.T, origin string, allowed func(string) bool) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.requests {
		if !strings.HasPrefix(u, origin+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page fetched %s: nothing but the server itself may be asked", u)
		}
	}
	for _, p := range b.problems {
		if allowed == nil || !allowed(p) {
			t.Errorf("the page reported: %s", p)
		}
	}
}

// screenshot saves the page to $E2E_SCREENSHOTS/<name>.png when that
// directory is set (for a person to look at).
func (b *browser) screenshot(t *testing.T, name string) {
	dir := os.Getenv("E2E_SCREENSHOTS")
	if dir == "" {
		return
	}
	if png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-").Replace(name)+".png"), png, 0o644)
	}
}

// TestBrowserReference: GET /docs, in Chromium, renders every operation
// of openapi.yaml, fetching nothing from anywhere but the server and
// breaking no rule of its Content-Security-Policy.
func TestBrowserReference(t *testing.T) {
	ts := MustServer(t)
	b := newBrowser(t)
	doc, _ := loadSpec(t)
	var want []string
	for _, op := range specOperations(doc) {
		want = append(want, op.ID)
	}
	slices.Sort(want)
	b.do(t, "the reference",
		chromedp.Navigate(ts.URL+"/docs"),
		chromedp.WaitVisible(".opblock"),
		discard(chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll(".opblock").length >= %d`, len(want)), chromedp.WithPollingTimeout(time.Minute))),
	)
	// Swagger UI renders an operation as <div class="opblock ..."
	// id="operations-<tag>-<operationId>">, once per tag of the operation.
	ids := value(t, b, "the operations", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".opblock")).map(e => e.id.split("-").pop()).sort()`))
	ids = slices.Compact(ids)
	b.screenshot(t, "reference")
	if !slices.Equal(ids, want) {
		t.Errorf("the reference renders the operations\n%v\nwant openapi.yaml's\n%v", ids, want)
	}
	if title := value(t, b, "the title", chromedp.Text(".info .title")); !strings.Contains(title, doc.Info.Title) {
		t.Errorf("the reference's title %q, want the spec's %q", title, doc.Info.Title)
	}
	b.wantOnly(t, ts.URL, func(p string) bool {
		// The bundles name their source maps, which the server does not
		// serve (DevTools alone asks for them).
		return strings.Contains(p, ".map")
	})
}

// TestBrowserGraphiQL: a browser's GET /v1/graphql is GraphiQL; with a
// token typed into its headers editor it runs a query and shows the
// result, asking nothing of any other origin.
func TestBrowserGraphiQL(t *testing.T) {
	ts := MustServer(t)
	a := ts.Actor(t, "explorer")
	org := MustOrg(t, a.C, "Explored")
	b := newBrowser(t)
	setEditor := func(selector, text string) chromedp.Action[chromedp.Void] {
		// What typing does: CodeMirror's own setValue, so GraphiQL sees a
		// change of the editor's content.
		return discard(chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.querySelector(%q).CodeMirror.setValue(%q); return true })()`, selector, text)))
	}
	b.do(t, "GraphiQL",
		chromedp.Navigate(ts.URL+"/v1/graphql"),
		chromedp.WaitVisible(".graphiql-container"),
		chromedp.WaitVisible(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"), // the headers editor, open
		setEditor(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror", fmt.Sprintf(`{"Authorization": "Bearer %s"}`, a.Token)),
		setEditor(".graphiql-query-editor .CodeMirror", `query { me { userId orgs { nodes { orgId name role } } } }`),
		chromedp.Click(".graphiql-execute-button"),
		discard(chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(".result-window").innerText.includes(%q)`, org.Id), chromedp.WithPollingTimeout(time.Minute))),
	)
	result := value(t, b, "the result", chromedp.Text(".result-window"))
	b.screenshot(t, "graphiql")
	for _, want := range []string{a.ID, org.Id, "Explored", "OWNER"} {
		if !strings.Contains(result, want) {
			t.Errorf("GraphiQL's result lacks %q:\n%s", want, result)
		}
	}
	if n := value(t, b, "localStorage", chromedp.Evaluate[int](`Object.keys(localStorage).filter(k => localStorage.getItem(k).includes("Bearer")).length`)); n != 0 {
		t.Errorf("GraphiQL kept the token in localStorage: %s", value(t, b, "keys", chromedp.Evaluate[string](`JSON.stringify(Object.keys(localStorage).filter(k => localStorage.getItem(k).includes("Bearer")).map(k => k + "=" + localStorage.getItem(k).slice(0, 300)))`)))
	}
	// The schema's introspection, sent before the token was typed, is
	// refused (401): GraphiQL says so in the console.
	b.wantOnly(t, ts.URL, func(p string) bool {
		return strings.Contains(p, ".map") || strings.Contains(p, "401") || strings.Contains(p, "introspection") || strings.Contains(p, "Unauthorized")
	})
}

// discard runs a, dropping its value.
func discard[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Run(ctx, a)
		return err
	})
}
