package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/agentgate/nmhost/auditlog"
)

// The audit log's commands: each takes the arguments after its own
// subcommand word (nmhost audit key ... gets what follows "key").
//
//	nmhost audit key                          the verifier key
//	nmhost audit checkpoint                   the signed tree head, now
//	nmhost audit verify [--checkpoint FILE] [--json]
//	nmhost audit prove SEQ                    an inclusion proof, JSON
//	nmhost audit check-proof --key VKEY [FILE|-]
//
// See docs/permissions.md, "The audit trail".

// maxCheckpointBytes bounds a checkpoint or proof read from a file: a
// signed tree head is a few hundred bytes and a proof of a record among
// 2⁶³ holds 63 hashes, so anything larger is not one.
const maxCheckpointBytes = 1 << 20

// runAuditKey: nmhost audit key. Prints the verifier key, creating the
// signing key in the data dir on first use.
func runAuditKey(ctx context.Context, env Env) error {
	if _, err := parse(specFor("audit key"), flag.NewFlagSet("audit key", flag.ContinueOnError), env); err != nil {
		return err
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	vkey, err := core.Audit().AuditVerifierKey()
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, vkey)
	return nil
}

// runAuditCheckpoint: nmhost audit checkpoint. Prints the signed tree head
// of the log as it is now, and nothing else, so that redirecting stdout to
// a file outside the data dir keeps a checkpoint.
func runAuditCheckpoint(ctx context.Context, env Env) error {
	if _, err := parse(specFor("audit checkpoint"), flag.NewFlagSet("audit checkpoint", flag.ContinueOnError), env); err != nil {
		return err
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	signed, size, _, err := core.Audit().AuditCheckpoint(ctx)
	if err != nil {
		return err
	}
	if _, err := env.Stdout.Write(signed); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "checkpoint of %d records; keep it outside the data dir and check the log against it with: nmhost audit verify --checkpoint FILE\n", size)
	return nil
}

// runAuditVerifyCheckpoint: nmhost audit verify [--checkpoint FILE] [--json].
// Verifies the whole log and, given a checkpoint kept elsewhere, that the
// log still extends it. Returns errAuditBroken after printing what is
// wrong, so the command exits 1.
func runAuditVerifyCheckpoint(ctx context.Context, env Env) error {
	var cpFile string
	var jsonOutput bool
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.StringVar(&cpFile, "checkpoint", "", "a checkpoint from nmhost audit checkpoint (- for stdin) the log must extend")
	fs.BoolVar(&jsonOutput, "json", false, "print the report as JSON")
	if _, err := parse(specFor("audit verify"), fs, env); err != nil {
		return err
	}
	var cp []byte
	if cpFile != "" {
		var err error
		if cp, err = readBounded(env, cpFile); err != nil {
			return err
		}
		if len(cp) == 0 {
			return fmt.Errorf("%s is empty, not a checkpoint", cpFile)
		}
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	rep, err := core.Audit().VerifyAudit(ctx, cp)
	if err != nil {
		return err
	}
	switch {
	case jsonOutput:
		b, _ := json.Marshal(rep)
		fmt.Fprintf(env.Stdout, "%s\n", b)
	case !rep.OK && rep.BadSeq > 0:
		fmt.Fprintf(env.Stdout, "BROKEN at record %d: %s\n%d records before it are intact.\n", rep.BadSeq, rep.Problem, rep.Records)
	case !rep.OK:
		fmt.Fprintf(env.Stdout, "BROKEN: %s\n", rep.Problem)
	case cp != nil:
		fmt.Fprintf(env.Stdout, "ok: %d records, log intact and extends the checkpoint of %d records; tree head %s\n", rep.Records, rep.Checkpoint, rep.Root)
	default:
		fmt.Fprintf(env.Stdout, "ok: %d records, log intact; tree head %s\n", rep.Records, rep.Root)
	}
	if !rep.OK {
		return errAuditBroken
	}
	return nil
}

// runAuditProve: nmhost audit prove SEQ. Prints the proof that record SEQ
// is in the log, as JSON (auditlog.Proof) that anyone with the verifier
// key can check (nmhost audit check-proof, or tlog and note directly).
func runAuditProve(ctx context.Context, env Env) error {
	args, err := parse(specFor("audit prove"), flag.NewFlagSet("audit prove", flag.ContinueOnError), env)
	if err != nil {
		return err
	}
	seq, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || seq <= 0 {
		return usagef("audit prove", "%q is not a record number (from nmhost audit tail)", args[0])
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	p, err := core.Audit().ProveAuditInclusion(ctx, seq)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s\n", b)
	return nil
}

// runAuditCheckProof: nmhost audit check-proof --key VKEY [FILE|-]. Checks
// a proof from nmhost audit prove with the verifier key alone; it opens no
// data dir, so it runs anywhere the proof was sent.
func runAuditCheckProof(ctx context.Context, env Env) error {
	var vkey string
	fs := flag.NewFlagSet("audit check-proof", flag.ContinueOnError)
	fs.StringVar(&vkey, "key", "", "the verifier `VKEY` (from nmhost audit key)")
	args, err := parse(specFor("audit check-proof"), fs, env)
	if err != nil {
		return err
	}
	if vkey == "" {
		return usagef("audit check-proof", "--key VKEY is required (from nmhost audit key)")
	}
	file := "-"
	if len(args) == 1 {
		file = args[0]
	}
	b, err := readBounded(env, file)
	if err != nil {
		return err
	}
	p, tree, err := auditlog.CheckProof(b, vkey)
	if err != nil {
		fmt.Fprintf(env.Stdout, "NOT PROVED: %v\n", err)
		return errAuditBroken
	}
	fmt.Fprintf(env.Stdout, "ok: record %d is in the log of %d records (tree head %s) signed by %s\n%s\n", p.Seq, tree.N, tree.Hash, vkey, p.Record)
	return nil
}

// readBounded reads a checkpoint or proof from a file, or stdin for "-".
func readBounded(env Env, name string) ([]byte, error) {
	var r io.Reader = env.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxCheckpointBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCheckpointBytes {
		return nil, errors.New(name + ": larger than any checkpoint or proof")
	}
	return b, nil
}
