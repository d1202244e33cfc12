// Package export ships the audit trail, the denial log and signed
// checkpoints of the trail to an OpenTelemetry Collector as OTLP/HTTP log
// records (nmhost export; docs/fleet.md). Only internal/cli imports it:
// host mode must not link the OTLP packages (scripts/test.sh and
// internal/archcheck check that).
//
// A batch counts as sent when the collector answered 2xx with an OTLP
// answer; only then does the cursor file in the data dir move past it.
// Requests go to the endpoint only: redirects are refused, never followed. Everything else (a
// collector that is down, throttles or fails) is retried, so nothing is
// lost; a lost answer sends a batch twice, so the receiver deduplicates
// by nmhost.seq.
package export
