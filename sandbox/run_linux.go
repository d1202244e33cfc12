package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"golang.org/x/sys/unix"
)

// rootUID is the user a run is as when the host runs as root (CI does):
// nobody, outside as inside. RLIMIT_NPROC does not bind a process whose
// real user is root on the host, and bwrap's --uid only names the user
// inside, mapped onto the one that started bwrap, so a run started by
// root would have no process limit. bwrap is started as nobody instead
// (after a stage of the host's own, stageName), and the workspace is
// handed to nobody (chownTree) so that it can write there.
const rootUID = 65534

// Available reports whether a run can start: bwrap on PATH. It does not
// start one; a run whose sandbox cannot be made fails with
// sandbox_unavailable and bwrap's own words.
func Available() error {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return mediator.Errorf(mediator.CodeSandboxUnavailable, "programs run only in a bubblewrap sandbox, and bwrap is not installed (Debian's bubblewrap package)")
	}
	return nil
}

// Run runs argv (argv[0] looked up in the sandbox's PATH) in a new
// sandbox and returns how it ended. Every process of the run is dead
// when Run returns. An error means the sandbox could not be made or the
// run could not be watched; a program that fails is a Result.
func Run(ctx context.Context, cfg Config, argv []string) (Result, error) {
	if len(argv) == 0 || argv[0] == "" {
		return Result{}, mediator.Errorf(mediator.CodeBadRequest, "sandbox: no program to run")
	}
	l := cfg.Limits.withDefaults()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return Result{}, Available()
	}
	dir := cfg.Dir
	if dir == "" {
		dir = "."
	}
	if !filepath.IsLocal(dir) {
		return Result{}, mediator.Errorf(mediator.CodePathNotAllowed, "sandbox: the working directory %q is not inside the workspace", mediator.Truncate(dir, 80))
	}
	exe, err := os.Executable()
	if err != nil {
		return Result{}, err
	}
	b := binds{ws: cfg.Workspace, init: exe}
	sock := ""
	if cfg.Proxy != "" {
		b.net, sock = filepath.Dir(cfg.Proxy), path.Join(netDir, filepath.Base(cfg.Proxy))
	}
	uid, gid := os.Getuid(), os.Getgid()
	var stage []string
	if uid == 0 {
		uid, gid = rootUID, rootUID
		if err := chownTree(cfg.Workspace, uid, gid); err != nil {
			return Result{}, fmt.Errorf("sandbox: handing the workspace to the sandbox's user: %w", err)
		}
		dir, s, err := staged(&b)
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(dir)
		stage = s
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	fd := func(f *os.File) int { files = append(files, f); return 2 + len(files) }
	filter, err := filterProgram()
	if err != nil {
		return Result{}, err
	}
	sec, err := memFile("nmhost-seccomp", filter)
	if err != nil {
		return Result{}, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer statusR.Close()
	secFD, statusFD := fd(sec), fd(statusW)
	home, _ := os.UserHomeDir()
	m, err := mounts(l, HiddenPaths(home, cfg.Hide), reachableBy(uid, gid), b)
	if err != nil {
		return Result{}, err
	}
	args := []string{
		"--unshare-user", "--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid), "--disable-userns",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--hostname", "nmhost-sandbox", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--json-status-fd", strconv.Itoa(statusFD), "--clearenv",
	}
	for _, kv := range environment(sock != "") {
		args = append(args, "--setenv", kv[0], kv[1])
	}
	args = append(args, m...)
	args = append(args, "--seccomp", strconv.Itoa(secFD), "--chdir", path.Join(WorkspacePath, filepath.ToSlash(dir)), "--")
	args = append(args, initArgs(l, sock, argv)...)

	cmd := exec.Command(bwrap, args...)
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if stage != nil {
		// As root, the host's executable starts first, in a mount
		// namespace of its own (stageName), binds what bwrap binds where
		// nobody can reach it, then becomes nobody and execs bwrap.
		cmd = &exec.Cmd{Path: exe, Args: append(append(append([]string{stageName}, stage...), "--", bwrap), args...)}
		attr.Unshareflags = syscall.CLONE_NEWNS
	}
	cmd.Env = []string{}
	cmd.ExtraFiles = files
	cmd.Stdin = cfg.Stdin
	out, outW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = outW, outW
	// Pdeathsig: if the host dies, bwrap dies, and --die-with-parent
	// takes the sandbox's init, and with it every process of the PID
	// namespace, along.
	cmd.SysProcAttr = attr
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	outW.Close()
	for _, f := range files {
		f.Close()
	}
	files = nil
	if err != nil {
		return Result{}, mediator.Errorf(mediator.CodeSandboxUnavailable, "sandbox: starting bwrap: %v", err)
	}
	status := make(chan int, 1)
	init := &nsInit{fd: -1}
	defer init.close()
	go func() { status <- exitCode(statusR, init) }()

	var res Result
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(out, int64(l.Output)+1))
		read <- b
	}()
	timer := time.NewTimer(l.Wall)
	defer timer.Stop()
	var got []byte
	select {
	case got = <-read:
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.TimedOut = true
	}
	if res.TimedOut || len(got) > l.Output {
		init.kill(cmd.Process)
	}
	if got == nil {
		out.Close() // the reader stops; nothing it read is kept
		got = <-read
	}
	if len(got) > l.Output {
		res.OutputCut = true
		got = got[:l.Output]
	}
	res.Output = got
	werr := cmd.Wait()
	code := <-status // after bwrap's last report, the init's PID among it
	// bwrap returns as soon as the program has, and its init (PID 1 of
	// the sandbox) dies after it, of its parent-death signal, taking the
	// program's daemons along: the run ends once that has happened.
	init.end()
	switch {
	case res.TimedOut || res.OutputCut:
		res.Exit = -1
	case code >= 0:
		res.Exit = code
	default:
		// bwrap never started the program: its message is the output.
		return res, mediator.Errorf(mediator.CodeSandboxUnavailable, "sandbox: bwrap could not make the sandbox (%v): %s", werr, mediator.Truncate(string(bytes.TrimSpace(res.Output)), 400))
	}
	return res, nil
}

// environment is the program's whole environment: nothing of the
// host's, which holds the person's tokens (GITHUB_TOKEN, AWS_*) and the
// host's own settings.
func environment(proxy bool) [][2]string {
	env := [][2]string{{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}, {"TERM", "dumb"}, {"TMPDIR", "/tmp"}}
	if proxy {
		u := "http://" + ProxyAddr
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
			env = append(env, [2]string{k, u})
		}
	}
	return env
}

// exitCode reads bwrap's --json-status-fd until it ends: it stores the
// sandbox init's PID (in the host's PID namespace) as soon as bwrap
// reports it, and returns the program's exit status, or -1 when bwrap
// reported none (it failed to make the sandbox, or was killed).
func exitCode(r io.Reader, init *nsInit) int {
	code := -1
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// bwrap's own member names ("child-pid", "exit-code"), read by
		// name.
		var s map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &s) != nil {
			continue
		}
		var n int
		if s["child-pid"] != nil && json.Unmarshal(s["child-pid"], &n) == nil && n > 0 {
			init.open(n)
		}
		if s["exit-code"] != nil && json.Unmarshal(s["exit-code"], &n) == nil {
			code = n
		}
	}
	return code
}

// memFile is a sealed-off in-memory file holding b, read from its start.
func memFile(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// staged makes, as root, the places nobody can reach to which the stage
// binds the workspace, the executable and the proxy's directory, and
// points b at them: bwrap, run as nobody, finds its sources by path, and
// the host's data directory (under /root, or a test's 0700 directory)
// is not on one nobody may walk. The directories stay empty in the
// host's own mount namespace; the binds exist only in the stage's.
func staged(b *binds) (dir string, stage []string, err error) {
	// In /tmp, not $TMPDIR, which may be a directory nobody cannot walk.
	dir, err = os.MkdirTemp("/tmp", "nmhost-sandbox-")
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, []string, error) { os.RemoveAll(dir); return "", nil, err }
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	add := func(src *string, name string, isDir bool) error {
		dst := filepath.Join(dir, name)
		if isDir {
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		} else if err := os.WriteFile(dst, nil, 0o755); err != nil {
			return err
		}
		stage = append(stage, *src, dst)
		*src = dst
		return nil
	}
	if err := add(&b.ws, "ws", true); err != nil {
		return fail(err)
	}
	if err := add(&b.init, "init", false); err != nil {
		return fail(err)
	}
	if b.net != "" {
		if err := add(&b.net, "net", true); err != nil {
			return fail(err)
		}
	}
	return dir, stage, nil
}

// chownTree hands every file of the workspace to uid:gid, through an
// os.Root so that a link inside it, or a name swapped for one, never
// reaches a file outside it.
func chownTree(dir string, uid, gid int) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		// An entry that is the user's already is left as it is: a chown
		// writes the inode even when nothing changes.
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
				return nil
			}
		}
		return root.Lchown(p, uid, gid)
	})
}
