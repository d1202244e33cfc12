package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
)

// followInterval is how often --follow looks for new records. Other host
// processes write them, so polling the shared store is the simple way.
const followInterval = 250 * time.Millisecond

func newFollowTicker() *time.Ticker { return time.NewTicker(followInterval) }

// following tells the person (on stderr, never mixed with the records)
// that everything up to now is printed and new records follow; scripts
// and tests wait for this line.
func following(env Env) {
	fmt.Fprintln(env.Stderr, "nmhost: following new records; Ctrl-C stops")
}

func runDenials(ctx context.Context, env Env) error {
	var (
		f          app.DenialFilter
		code       string
		since      string
		until      string
		follow     bool
		jsonOutput bool
	)
	fs := flag.NewFlagSet("denials", flag.ContinueOnError)
	fs.StringVar(&f.AgentID, "agent", "", "only the agent with this id `A`")
	fs.StringVar(&f.Permission, "permission", "", "only this permission `P`, e.g. network.fetch")
	fs.StringVar(&code, "code", "", "only this reason code `C`, e.g. host_not_allowed")
	fs.StringVar(&since, "since", "", "from this time `T`: RFC 3339, ms since the epoch, or a duration ago such as 1h")
	fs.StringVar(&until, "until", "", "before this time `T` (same forms as --since)")
	fs.IntVar(&f.Limit, "limit", 50, fmt.Sprintf("at most `N` records (the newest), 1-%d", app.MaxDenialPage))
	fs.BoolVar(&follow, "follow", false, "keep printing new denials as they are written, by any host process (Ctrl-C stops)")
	fs.BoolVar(&jsonOutput, "json", false, "print JSON lines")
	if _, err := parse(specFor("denials"), fs, env); err != nil {
		return err
	}
	if f.Limit < 1 || f.Limit > app.MaxDenialPage {
		return usagef("denials", "--limit %d is out of range: 1-%d", f.Limit, app.MaxDenialPage)
	}
	if code != "" && !slices.Contains(codeNames(), code) {
		return usagef("denials", "--code %q is not a reason code; known: %s", mediator.Truncate(code, 40), strings.Join(codeNames(), ", "))
	}
	if f.Permission != "" && !slices.Contains(deniablePermissions(), f.Permission) {
		return usagef("denials", "--permission %q is not a permission; known: %s", mediator.Truncate(f.Permission, 40), strings.Join(deniablePermissions(), ", "))
	}
	f.Code = mediator.Code(code)
	now := time.Now()
	var err error
	if f.Since, err = app.ParseFilterTime(since, now); err != nil {
		return usagef("denials", "--since: %s", mediator.MessageOf(err))
	}
	if f.Until, err = app.ParseFilterTime(until, now); err != nil {
		return usagef("denials", "--until: %s", mediator.MessageOf(err))
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))

	// The newest record of any kind is where the first page ends and
	// --follow starts, so a record written meanwhile is printed once: by
	// the page or by the follow, never by neither.
	var top int64
	newest, err := core.Denials().ListDenials(ctx, app.DenialFilter{Limit: 1})
	if err != nil {
		return err
	}
	if len(newest.Denials) > 0 {
		top = newest.Denials[0].ID
	}
	var recs []mediator.Denial
	if top > 0 {
		g := f
		g.BeforeID = top + 1
		page, err := core.Denials().ListDenials(ctx, g)
		if err != nil {
			return err
		}
		// Pages come newest first; people read logs oldest first.
		recs = slices.Clone(page.Denials)
		slices.Reverse(recs)
	}
	p := newDenialPrinter(env.Stdout, jsonOutput)
	for _, d := range recs {
		p.print(d)
	}
	if len(recs) == 0 {
		p.none("no matching denials")
	}
	p.flush()
	if !follow {
		return nil
	}
	following(env)
	t := newFollowTicker()
	defer t.Stop()
	last := top
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		g := f
		g.BeforeID, g.AfterID, g.Limit = 0, last, app.MaxDenialPage
		page, err := core.Denials().ListDenials(ctx, g)
		if err != nil {
			return err
		}
		for _, d := range page.Denials {
			p.print(d)
			last = max(last, d.ID)
		}
		p.flush()
	}
}

type denialPrinter struct {
	json bool
	w    io.Writer
	tw   *tabwriter.Writer
	head bool
}

func newDenialPrinter(w io.Writer, jsonOutput bool) *denialPrinter {
	return &denialPrinter{json: jsonOutput, w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

func (p *denialPrinter) header() {
	if !p.head {
		fmt.Fprintln(p.tw, "TIME\tAGENT\tPERMISSION\tCODE\tTARGET\tREASON")
		p.head = true
	}
}

func (p *denialPrinter) print(d mediator.Denial) {
	if p.json {
		b, _ := json.Marshal(d)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	p.header()
	// The zone is printed with the time: a log read on another machine, or
	// after a change to daylight saving, must not shift silently.
	ts := time.UnixMilli(d.Timestamp).Local().Format("2006-01-02 15:04:05.000 -07:00")
	fmt.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ts, cell(d.AgentID), cell(d.Permission), d.Code, cell(denialTarget(d)), cell(d.Context.Reason))
}

// none says that nothing matched, under the header (text only: JSON lines
// stay empty for programs).
func (p *denialPrinter) none(msg string) {
	if p.json {
		return
	}
	p.header()
	fmt.Fprintln(p.tw, msg)
}

func (p *denialPrinter) flush() {
	if !p.json {
		p.tw.Flush()
	}
}

// denialTarget is what the denial was about, as far as the record knows:
// the URL (with its method when it is not a plain GET), else the operation
// and the selector of a page call, else the import refused at link time.
func denialTarget(d mediator.Denial) string {
	c := d.Context
	if c.URL != "" {
		if c.Method != "" && c.Method != "GET" {
			return c.Method + " " + c.URL
		}
		return c.URL
	}
	if op := c.Details["operation"]; op != "" {
		if sel := c.Details["selector"]; sel != "" {
			return op + " " + sel
		}
		return op
	}
	return c.Details["import"]
}

// cell keeps a table cell on one line and free of terminal escapes: the
// values come from agents and must not be able to rewrite the screen or
// fake a row (mediator.EscapeTerminal), and a long one is cut to 100
// bytes on a character boundary.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return mediator.Truncate(mediator.EscapeTerminal(s), 100)
}
