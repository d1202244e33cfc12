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

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// followInterval is how often --follow looks for new records. Other host
// processes write them, so polling the shared store is the simple way.
const followInterval = 250 * time.Millisecond

func runDenials(ctx context.Context, env Env) error {
	var (
		f          store.DenialFilter
		code       string
		since      string
		until      string
		follow     bool
		jsonOutput bool
	)
	fs := flag.NewFlagSet("denials", flag.ContinueOnError)
	fs.StringVar(&f.AgentID, "agent", "", "only this agent")
	fs.StringVar(&f.Permission, "permission", "", "only this permission, e.g. network.fetch")
	fs.StringVar(&code, "code", "", "only this reason code, e.g. host_not_allowed")
	fs.StringVar(&since, "since", "", "from this time: RFC 3339, ms since the epoch, or a duration ago such as 1h")
	fs.StringVar(&until, "until", "", "before this time (same forms as --since)")
	fs.IntVar(&f.Limit, "limit", 50, "at most this many records (newest), 1-1000")
	fs.BoolVar(&follow, "follow", false, "keep printing new denials as they are written")
	fs.BoolVar(&jsonOutput, "json", false, "print JSON lines")
	if err := parseFlags(fs, env); err != nil {
		return err
	}
	f.Code = mediator.Code(code)
	now := time.Now()
	var err error
	if f.Since, err = store.ParseFilterTime(since, now); err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if f.Until, err = store.ParseFilterTime(until, now); err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()

	page, err := st.ListDenials(ctx, f)
	if err != nil {
		return err
	}
	// Pages come newest first; people read logs oldest first.
	recs := slices.Clone(page.Denials)
	slices.Reverse(recs)
	p := newDenialPrinter(env.Stdout, jsonOutput)
	var last int64
	for _, d := range recs {
		p.print(d)
		last = max(last, d.ID)
	}
	p.flush()
	if !follow {
		return nil
	}
	if last == 0 {
		// Nothing matched yet: follow from the newest record of any kind.
		all, err := st.ListDenials(ctx, store.DenialFilter{Limit: 1})
		if err != nil {
			return err
		}
		if len(all.Denials) > 0 {
			last = all.Denials[0].ID
		}
	}
	t := time.NewTicker(followInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		g := f
		g.BeforeID, g.AfterID, g.Limit = 0, last, 1000
		page, err := st.ListDenials(ctx, g)
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

func (p *denialPrinter) print(d mediator.Denial) {
	if p.json {
		b, _ := json.Marshal(d)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	if !p.head {
		fmt.Fprintln(p.tw, "TIME\tAGENT\tPERMISSION\tCODE\tTARGET\tREASON")
		p.head = true
	}
	ts := time.UnixMilli(d.Timestamp).Local().Format("2006-01-02 15:04:05.000")
	fmt.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ts, cell(d.AgentID), cell(d.Permission), d.Code, cell(d.Context.URL), cell(d.Context.Reason))
}

func (p *denialPrinter) flush() {
	if !p.json {
		p.tw.Flush()
	}
}

// cell keeps a table cell on one line and free of terminal escapes: the
// values come from agents and must not be able to rewrite the screen.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
