//go:build linux

package powerloss

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFetchDecisionsSurvivePowerLoss runs the real host with its data dir
// on the layer. Workers fetch a loopback canary, each request under a
// path of its own; midway the test keeps a checkpoint from the host
// (audit-checkpoint, as the extension does) outside the data dir; more
// requests reach the canary; the host is killed with SIGKILL and the
// power cut, dropping everything not fsynced. The store is then opened on
// what the disk holds:
//   - strict: every request the canary received has its allowing
//     decision on record;
//   - written: the requests without a record all reached the canary
//     within the last moments before the crash (the sync window,
//     syncWindowMs, 5 ms by default, plus the fsync's own time);
//   - both: the trail verifies, and verifies against the checkpoint (a
//     checkpoint is signed only over durable records).
func TestFetchDecisionsSurvivePowerLoss(t *testing.T) {
	const workers, before, after = 3, 10, 10
	// lossBound is how long before the crash a request whose record was
	// lost may have reached the canary: the 5 ms window plus an fsync and
	// a busy 2-core machine's scheduling. Seen values are reported.
	const lossBound = 500 * time.Millisecond
	for _, durability := range []string{"strict", "written"} {
		t.Run(durability, func(t *testing.T) {
			n := iterations(t, 8)
			c := newCanary(t)
			disk := newDisk(t, durability)
			var lostTotal, seenTotal int
			var worst time.Duration
			for it := range n {
				l := mountFor(t, disk)
				h := startHost(t, l.Mountpoint)
				if it == 0 {
					if r := h.call(t, "install-agent", profile("canary", strings.TrimPrefix(c.URL, "http://"))); !r.Success {
						t.Fatalf("install: %+v", r)
					}
				}
				for len(c.hits) > 0 {
					<-c.hits
				}
				h.stream(c, it, workers)
				c.wait(t, before)
				cp, cpSize := h.checkpoint(t)
				c.wait(t, after)
				// More fetches are in flight: the crash lands mid-stream.
				crashed := h.crash(t, l)

				paths, records := decided(t, disk)
				if out, code := nmhost(t, disk, "audit", "verify"); code != 0 || !strings.HasPrefix(out, "ok: ") {
					t.Fatalf("iteration %d: audit verify after the power loss: exit %d\n%s", it, code, out)
				}
				if verifyAgainst(t, disk, cp, cpSize, records) {
					t.Fatalf("iteration %d: the checkpoint signed %d records but only %d were durable", it, cpSize, records)
				}
				prefix := "/i" + strconv.Itoa(it) + "-"
				c.mu.Lock()
				var lost []string
				for p, at := range c.seen {
					if !paths[p] && (durability == "strict" || strings.HasPrefix(p, prefix)) {
						lost = append(lost, p)
						worst = max(worst, crashed.Sub(at))
						if crashed.Sub(at) > lossBound {
							t.Errorf("iteration %d: %s reached the canary %v before the crash and its record was lost", it, p, crashed.Sub(at))
						}
					}
					if strings.HasPrefix(p, prefix) {
						seenTotal++
					}
				}
				c.mu.Unlock()
				slices.Sort(lost)
				lostTotal += len(lost)
				if durability == "strict" && len(lost) > 0 {
					t.Fatalf("iteration %d: %d requests reached the canary with no decision on record after the power loss: %v", it, len(lost), lost)
				}
				t.Logf("iteration %d: %d records durable, checkpoint of %d verified; %d requests of this iteration without a record %v; %d fsyncs reached the disk",
					it, records, cpSize, len(lost), lost, l.Syncs())
			}
			t.Logf("%s: %d power losses, %d requests reached the canary, %d without a record (the oldest of them reached the canary %v before the crash)", durability, n, seenTotal, lostTotal, worst)
		})
	}
}

// TestCheckpointCatchesALyingDisk: when the disk acknowledges fsyncs it
// does not keep, records a checkpoint signed are lost with the power. The
// trail on its own still verifies (what is left is a prefix), so only a
// checkpoint kept outside the data dir can tell: verify --checkpoint must
// report it broken, never intact.
func TestCheckpointCatchesALyingDisk(t *testing.T) {
	for _, durability := range []string{"strict", "written"} {
		t.Run(durability, func(t *testing.T) {
			c := newCanary(t)
			disk := newDisk(t, durability)
			l := mountFor(t, disk)
			h := startHost(t, l.Mountpoint)
			if r := h.call(t, "install-agent", profile("canary", strings.TrimPrefix(c.URL, "http://"))); !r.Success {
				t.Fatalf("install: %+v", r)
			}
			h.stream(c, 0, 2)
			c.wait(t, 5)
			l.LieAboutSync()
			c.wait(t, 5) // records written after the disk began to lie
			cp, cpSize := h.checkpoint(t)
			c.wait(t, 5)
			h.crash(t, l)
			_, records := decided(t, disk)
			if out, code := nmhost(t, disk, "audit", "verify"); code != 0 || !strings.HasPrefix(out, "ok: ") {
				t.Fatalf("audit verify after the power loss: exit %d\n%s", code, out)
			}
			if !verifyAgainst(t, disk, cp, cpSize, records) {
				t.Fatalf("the disk lied yet all %d records the checkpoint signed survived (%d on disk): the test did not lose what it meant to", cpSize, records)
			}
			t.Logf("the checkpoint signed %d records, %d survived; verify --checkpoint reports it broken", cpSize, records)
		})
	}
}
