// Package devenv runs what `fos dev` needs on one machine: a private
// PostgreSQL cluster started from the machine's own binaries and an embedded
// Temporal dev server with its Web UI.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// DatabaseName is the database StartPostgres creates in the private cluster.
const DatabaseName = "fos"

const (
	pgSuperuser     = "postgres"
	pgStartTimeout  = 60 * time.Second
	pgStopTimeout   = 30 * time.Second
	maxSocketPath   = 90 // sun_path holds 107 bytes; the socket is <dir>/.s.PGSQL.NNNNN
	pgLogFileName   = "postgres.log"
	pgPortFileName  = "port"
	pgDataDirName   = "data"
	pgStartAttempts = 3
)

// Postgres is a private PostgreSQL server started by StartPostgres. It is a
// child process of the caller: it listens on a loopback port (and a unix
// socket in its data directory when the path is short enough) with trust
// authentication, and gets a fast-shutdown signal if the caller dies.
type Postgres struct {
	dir     string // the directory given to StartPostgres (absolute)
	dataDir string
	port    int
	bins    pgBinaries
	cred    *syscall.Credential // non-nil when PostgreSQL runs as another OS user
	logger  *slog.Logger

	proc *pgProcess

	stopOnce sync.Once
	stopErr  error
}

// pgProcess is one run of the postmaster.
type pgProcess struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd.Wait returns
	waitErr error         // set before exited is closed
	logger  *slog.Logger
}

type pgBinaries struct {
	initdb   string
	pgCtl    string
	postgres string
}

// URL returns a pgx-compatible URL of the fos database.
func (p *Postgres) URL() string { return p.urlFor(DatabaseName) }

// Port returns the loopback TCP port the server listens on.
func (p *Postgres) Port() int { return p.port }

// DataDir returns the cluster's data directory.
func (p *Postgres) DataDir() string { return p.dataDir }

func (p *Postgres) urlFor(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", pgSuperuser, p.port, db)
}

// StartPostgres starts (and on first use initializes) a private PostgreSQL
// cluster under dir: the data directory is dir/data, the server log
// dir/postgres.log. The cluster survives restarts; the database "fos" is
// created when missing. When the process runs as root, the cluster is owned
// by and runs as the "postgres" OS user, because PostgreSQL refuses to run as
// root. The caller must call Stop on every exit path.
func StartPostgres(ctx context.Context, dir string, logger *slog.Logger) (*Postgres, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if dir == "" {
		return nil, errors.New("devenv: postgres directory is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("devenv: resolve postgres directory %q: %w", dir, err)
	}
	bins, err := findPostgresBinaries()
	if err != nil {
		return nil, err
	}
	p := &Postgres{
		dir:     abs,
		dataDir: filepath.Join(abs, pgDataDirName),
		bins:    bins,
		logger:  logger.With("component", "postgres"),
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("devenv: create postgres directory: %w", err)
	}
	if os.Geteuid() == 0 {
		if err := p.prepareForPostgresUser(); err != nil {
			return nil, err
		}
	}
	if err := p.initIfNeeded(ctx); err != nil {
		return nil, err
	}
	if err := p.clearPreviousServer(ctx); err != nil {
		return nil, err
	}

	var lastErr error
	for attempt := 1; attempt <= pgStartAttempts; attempt++ {
		port, err := p.choosePort(attempt > 1)
		if err != nil {
			return nil, err
		}
		p.port = port
		lastErr = p.startServer(ctx)
		if lastErr == nil {
			break
		}
		// Only a port taken since we checked it is worth another try.
		if ctx.Err() != nil || !errors.Is(lastErr, errPortTaken) {
			return nil, lastErr
		}
		p.logger.Warn("postgres could not bind its port, retrying on another port", "port", port)
	}
	if lastErr != nil {
		return nil, lastErr
	}

	if err := p.ensureDatabase(ctx, DatabaseName); err != nil {
		if stopErr := p.Stop(context.WithoutCancel(ctx)); stopErr != nil {
			p.logger.Error("stop postgres after failed start", "error", stopErr)
		}
		return nil, err
	}
	p.logger.Info("postgres ready", "url", p.URL(), "data_dir", p.dataDir)
	return p, nil
}

// Stop shuts the server down with a fast shutdown (what `pg_ctl stop -m
// fast` does: SIGINT to the postmaster) and waits for it to exit, escalating
// to an immediate shutdown and then SIGKILL when ctx ends or the server takes
// longer than 30s. Stop is idempotent.
func (p *Postgres) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

func (p *Postgres) stop(ctx context.Context) error {
	if p.proc == nil {
		return nil
	}
	if err := p.proc.stop(ctx); err != nil {
		return err
	}
	p.logger.Info("postgres stopped")
	return nil
}

// stop sends SIGINT (fast shutdown), then SIGQUIT (immediate shutdown) and
// SIGKILL when the previous signal did not end the process within its time.
func (pp *pgProcess) stop(ctx context.Context) error {
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, pgStopTimeout},
		{syscall.SIGQUIT, 5 * time.Second},
		{syscall.SIGKILL, 5 * time.Second},
	}
	select {
	case <-pp.exited:
		pp.logger.Warn("postgres had already exited", "error", pp.waitErr)
		return nil
	default:
	}
	for i, step := range steps {
		if i > 0 {
			pp.logger.Warn("postgres is slow to stop, escalating", "signal", step.sig)
		}
		if err := pp.cmd.Process.Signal(step.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("devenv: signal postgres: %w", err)
		}
		timer := time.NewTimer(step.wait)
		select {
		case <-pp.exited:
			timer.Stop()
			if i == 0 {
				return nil
			}
			return fmt.Errorf("devenv: postgres did not shut down cleanly within %v, needed %v", pgStopTimeout, step.sig)
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			ctx = context.Background() // escalate once, then use the fixed waits
		}
	}
	return errors.New("devenv: postgres did not exit after SIGKILL")
}

// findPostgresBinaries looks for initdb in PATH, then in
// /usr/lib/postgresql/<version>/bin (newest version first), and takes
// pg_ctl and postgres from the same directory.
func findPostgresBinaries() (pgBinaries, error) {
	var dirs []string
	if path, err := exec.LookPath("initdb"); err == nil {
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			dirs = append(dirs, filepath.Dir(resolved))
		}
		dirs = append(dirs, filepath.Dir(path))
	}
	dirs = append(dirs, debianPostgresBinDirs()...)
	for _, d := range dirs {
		b := pgBinaries{
			initdb:   filepath.Join(d, "initdb"),
			pgCtl:    filepath.Join(d, "pg_ctl"),
			postgres: filepath.Join(d, "postgres"),
		}
		if isExecutable(b.initdb) && isExecutable(b.pgCtl) && isExecutable(b.postgres) {
			return b, nil
		}
	}
	return pgBinaries{}, errors.New("devenv: PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in PATH or /usr/lib/postgresql/*/bin; install them (Debian: apt-get install postgresql) or set DATABASE_URL")
}

// HasPostgresBinaries reports whether StartPostgres can find initdb, pg_ctl
// and postgres on this machine.
func HasPostgresBinaries() bool {
	_, err := findPostgresBinaries()
	return err == nil
}

func debianPostgresBinDirs() []string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(matches, func(i, j int) bool {
		vi, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(matches[i])), 64)
		vj, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(matches[j])), 64)
		return vi > vj
	})
	return matches
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// prepareForPostgresUser is used when running as root: PostgreSQL runs as
// the "postgres" OS user, which must own everything under p.dir and be able
// to reach it.
func (p *Postgres) prepareForPostgresUser() error {
	u, err := user.Lookup(pgSuperuser)
	if err != nil {
		return fmt.Errorf("devenv: running as root, PostgreSQL must run as the %q OS user, which was not found (install the postgresql package or run as a normal user): %w", pgSuperuser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return fmt.Errorf("devenv: parse uid of %q: %w", pgSuperuser, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return fmt.Errorf("devenv: parse gid of %q: %w", pgSuperuser, err)
	}
	p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}

	// Every ancestor must be searchable by the postgres user. Root's home
	// (0700) is not: the cluster then lives in the system's temporary area.
	if blocked, err := unreachableAncestor(p.dir, p.cred); err != nil {
		return err
	} else if blocked != "" {
		loc, err := p.relocate(blocked)
		if err != nil {
			return err
		}
		p.dir, p.dataDir = loc, filepath.Join(loc, pgDataDirName)
	}

	// Hand the whole directory to the postgres user (a no-op after the first run).
	err = filepath.WalkDir(p.dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid == p.cred.Uid && st.Gid == p.cred.Gid {
			return nil
		}
		return os.Lchown(path, int(p.cred.Uid), int(p.cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("devenv: give %s to the %q OS user: %w", p.dir, pgSuperuser, err)
	}
	return nil
}

// unreachableAncestor returns the first ancestor of dir (nearest the root)
// that cred cannot search, or "" when every one is searchable.
func unreachableAncestor(dir string, cred *syscall.Credential) (string, error) {
	var chain []string
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		st, err := os.Stat(chain[i])
		if err != nil {
			return "", fmt.Errorf("devenv: stat %s: %w", chain[i], err)
		}
		if !searchableBy(st, cred) {
			return chain[i], nil
		}
	}
	return "", nil
}

// Files of a relocated cluster: LocationFileName, in the requested
// directory, names the cluster's directory in the temporary area; the
// checkout file there names the requested directory it belongs to.
const (
	LocationFileName   = "location"
	relocatedPrefix    = "fos-pg-"
	relocatedOwnerFile = "checkout"
)

// relocate picks the directory of a cluster that cannot live in p.dir
// because the postgres OS user cannot reach it (blocked is the ancestor in
// the way, e.g. root's 0700 home): a directory fos-pg-XXXXXX in the system's
// temporary area, owned by that user, recorded in p.dir/location. The same
// directory is used while p.dir/location exists; once p.dir (or .fos/) is
// removed, the next start removes the old cluster of this checkout and
// makes a new one, so the cluster goes with .fos/.
func (p *Postgres) relocate(blocked string) (string, error) {
	tmp, err := relocationArea(p.cred)
	if err != nil {
		return "", fmt.Errorf("devenv: the %q OS user, which runs PostgreSQL when fos runs as root, cannot reach %s (%s is not searchable by it) and %w", pgSuperuser, p.dir, blocked, err)
	}
	pointer := filepath.Join(p.dir, LocationFileName)
	if b, err := os.ReadFile(pointer); err == nil {
		loc := strings.TrimSpace(string(b))
		switch err := p.checkRelocated(loc); {
		case err == nil:
			p.logger.Info("the postgres OS user cannot reach the checkout; using the private cluster in the temporary area (it is removed with .fos/)",
				"cluster_dir", loc, "unreachable", blocked)
			return loc, nil
		case errors.Is(err, fs.ErrNotExist):
			p.logger.Warn("the private cluster in the temporary area is gone (cleared at reboot?); initializing a new one", "was", loc)
		default:
			return "", fmt.Errorf("devenv: %s names %s, which is not a private cluster of this checkout (%w); remove %s to start a new one", pointer, loc, err, pointer)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("devenv: read %s: %w", pointer, err)
	}
	p.removeAbandonedClusters(tmp)

	loc, err := os.MkdirTemp(tmp, relocatedPrefix)
	if err != nil {
		return "", fmt.Errorf("devenv: create a cluster directory in %s: %w", tmp, err)
	}
	if err := os.WriteFile(filepath.Join(loc, relocatedOwnerFile), []byte(p.dir+"\n"), 0o644); err != nil {
		_ = os.RemoveAll(loc)
		return "", fmt.Errorf("devenv: write %s: %w", filepath.Join(loc, relocatedOwnerFile), err)
	}
	if err := os.Chown(loc, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
		_ = os.RemoveAll(loc)
		return "", fmt.Errorf("devenv: give %s to the %q OS user: %w", loc, pgSuperuser, err)
	}
	body := loc + "\n"
	if err := os.WriteFile(pointer, []byte(body), 0o644); err != nil {
		_ = os.RemoveAll(loc)
		return "", fmt.Errorf("devenv: write %s: %w", pointer, err)
	}
	p.logger.Info("the postgres OS user cannot reach the checkout; the private cluster lives in the temporary area instead (it is removed with .fos/)",
		"cluster_dir", loc, "unreachable", blocked, "pointer", pointer)
	return loc, nil
}

// relocationArea returns the system's temporary directory when the postgres
// user can reach it, else /tmp.
func relocationArea(cred *syscall.Credential) (string, error) {
	for _, abs := range relocationCandidates() {
		st, err := os.Stat(abs)
		if err != nil || !st.IsDir() {
			continue
		}
		if blocked, err := unreachableAncestor(filepath.Join(abs, "x"), cred); err == nil && blocked == "" {
			return abs, nil
		}
	}
	return "", fmt.Errorf("neither %s nor /tmp is reachable by it either (chmod o+x the directory in the way, or set DATABASE_URL)", os.TempDir())
}

// relocationCandidates are the directories a relocated cluster may live
// in: the system's temporary directory, then /tmp.
func relocationCandidates() []string {
	out := []string{"/tmp"}
	if abs, err := filepath.Abs(os.TempDir()); err == nil && abs != "/tmp" {
		out = []string{abs, "/tmp"}
	}
	return out
}

// checkRelocated verifies that loc is a cluster directory this checkout
// made: directly in a relocationCandidates directory, named fos-pg-*, a real directory (no symlink)
// owned by the postgres user, writable by it alone, whose checkout file
// names p.dir. A missing loc gives an error matching fs.ErrNotExist.
func (p *Postgres) checkRelocated(loc string) error {
	if !slices.Contains(relocationCandidates(), filepath.Dir(loc)) || !strings.HasPrefix(filepath.Base(loc), relocatedPrefix) {
		return fmt.Errorf("not a %s* directory in %s", relocatedPrefix, strings.Join(relocationCandidates(), " or "))
	}
	info, err := os.Lstat(loc)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !info.IsDir() || !ok || st.Uid != p.cred.Uid || info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("not a directory owned and writable only by the %q OS user", pgSuperuser)
	}
	owner, err := os.ReadFile(filepath.Join(loc, relocatedOwnerFile))
	if err != nil || strings.TrimSpace(string(owner)) != p.dir {
		return fmt.Errorf("its %s file does not name %s", relocatedOwnerFile, p.dir)
	}
	return nil
}

// removeAbandonedClusters removes the relocated clusters of this checkout
// whose pointer file is gone (the user removed .fos/), unless a postmaster
// still runs on one.
func (p *Postgres) removeAbandonedClusters(tmp string) {
	matches, _ := filepath.Glob(filepath.Join(tmp, relocatedPrefix+"*"))
	for _, loc := range matches {
		if p.checkRelocated(loc) != nil {
			continue
		}
		other := &Postgres{dataDir: filepath.Join(loc, pgDataDirName)}
		if b, err := os.ReadFile(filepath.Join(other.dataDir, "postmaster.pid")); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && other.isOurPostmaster(pid) {
				p.logger.Warn("an earlier cluster of this checkout is still running; leaving it", "cluster_dir", loc, "pid", pid)
				continue
			}
		}
		if err := os.RemoveAll(loc); err != nil {
			p.logger.Warn("remove an earlier cluster of this checkout", "cluster_dir", loc, "error", err)
			continue
		}
		p.logger.Info("removed the private cluster of an earlier .fos/ of this checkout", "cluster_dir", loc)
	}
}

func searchableBy(info os.FileInfo, cred *syscall.Credential) bool {
	mode := info.Mode().Perm()
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return mode&0o001 != 0
	}
	switch {
	case st.Uid == cred.Uid:
		return mode&0o100 != 0
	case st.Gid == cred.Gid:
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}

// command builds a command for a PostgreSQL binary (see prepare).
func (p *Postgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	p.prepare(cmd)
	return cmd
}

// prepare runs cmd in p.dir with a C locale, as the postgres OS user when
// needed.
func (p *Postgres) prepare(cmd *exec.Cmd) {
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
		if u, err := user.LookupId(strconv.FormatUint(uint64(p.cred.Uid), 10)); err == nil {
			cmd.Env = append(cmd.Env, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username)
		}
	}
}

func (p *Postgres) initIfNeeded(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(p.dataDir, "PG_VERSION")); err == nil {
		// PostgreSQL refuses a data directory others can read (e.g. after a
		// recursive chmod); put its mode back.
		st, err := os.Stat(p.dataDir)
		if err != nil {
			return fmt.Errorf("devenv: stat postgres data directory: %w", err)
		}
		if perm := st.Mode().Perm(); perm != 0o700 && perm != 0o750 {
			if err := os.Chmod(p.dataDir, 0o700); err != nil {
				return fmt.Errorf("devenv: chmod postgres data directory: %w", err)
			}
		}
		return nil
	}
	entries, err := os.ReadDir(p.dataDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("devenv: read postgres data directory: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("devenv: %s is not empty but holds no PostgreSQL cluster (no PG_VERSION); remove it to start over", p.dataDir)
	}
	p.logger.Info("initializing postgres cluster", "data_dir", p.dataDir, "initdb", p.bins.initdb)
	cmd := p.command(ctx, p.bins.initdb,
		"--pgdata="+p.dataDir,
		"--username="+pgSuperuser,
		"--auth=trust",
		"--encoding=UTF8",
		"--no-locale",
		"--no-instructions",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The data directory was empty or missing before: do not leave a
		// half-made cluster that would block the next start.
		if rmErr := os.RemoveAll(p.dataDir); rmErr != nil {
			p.logger.Warn("remove partial postgres data directory", "error", rmErr)
		}
		return fmt.Errorf("devenv: initdb failed: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// clearPreviousServer deals with a postmaster.pid left by an earlier run.
// A postmaster still running on this data directory whose parent died (an
// orphan of a crashed run) is stopped with `pg_ctl stop -m fast`; one whose
// parent is alive belongs to another running process, and is an error; a
// pid file naming no such postmaster is stale and removed.
func (p *Postgres) clearPreviousServer(ctx context.Context) error {
	pidFile := filepath.Join(p.dataDir, "postmaster.pid")
	data, err := os.ReadFile(pidFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("devenv: read %s: %w", pidFile, err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 || !p.isOurPostmaster(pid) {
		p.logger.Warn("removing stale postmaster.pid", "pid_file", pidFile)
		if err := os.Remove(pidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("devenv: remove stale %s: %w", pidFile, err)
		}
		return nil
	}
	if ppid := parentPID(pid); ppid > 1 {
		return fmt.Errorf("devenv: a PostgreSQL server (pid %d, parent pid %d) is already running on %s; is another `fos dev` running?", pid, ppid, p.dataDir)
	}
	p.logger.Warn("stopping orphaned postgres from a previous run", "pid", pid)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pgStopTimeout+5*time.Second)
	defer cancel()
	cmd := p.command(stopCtx, p.bins.pgCtl, "stop", "-D", p.dataDir, "-m", "fast", "-w",
		"-t", strconv.Itoa(int(pgStopTimeout/time.Second)))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("devenv: stop orphaned postgres (pid %d): %w: %s", pid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// isOurPostmaster reports whether pid is a live postgres process serving
// p.dataDir.
func (p *Postgres) isOurPostmaster(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "postgres") && !strings.Contains(filepath.Base(args[0]), "postmaster") {
		return false
	}
	for _, a := range args {
		if a == p.dataDir || strings.HasSuffix(a, "="+p.dataDir) {
			return true
		}
	}
	return false
}

func parentPID(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may contain spaces.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// choosePort returns the port used last time when it is free, else a free
// loopback port, and remembers it in dir/port.
func (p *Postgres) choosePort(fresh bool) (int, error) {
	portFile := filepath.Join(p.dir, pgPortFileName)
	if !fresh {
		if b, err := os.ReadFile(portFile); err == nil {
			if port, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && port > 0 && port < 65536 && portFree(port) {
				return port, nil
			}
		}
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(portFile, []byte(strconv.Itoa(port)+"\n"), 0o644); err != nil {
		return 0, fmt.Errorf("devenv: write %s: %w", portFile, err)
	}
	return port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("devenv: find a free loopback port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	errServerExited = errors.New("postgres exited during start")
	errPortTaken    = errors.New("postgres port already in use")
)

// startServer runs the postmaster as a child process in its own process
// group (so a terminal's Ctrl-C reaches only the caller, which then stops
// it in order) with a parent-death signal (so it never outlives the caller),
// and waits until it accepts connections.
func (p *Postgres) startServer(ctx context.Context) error {
	socketDir := ""
	if len(p.dataDir) <= maxSocketPath {
		socketDir = p.dataDir
	}
	logPath := filepath.Join(p.dir, pgLogFileName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("devenv: open postgres log: %w", err)
	}
	defer func() { _ = logFile.Close() }() // the child keeps its own descriptor
	logOffset, _ := logFile.Seek(0, io.SeekEnd)

	// Not exec.CommandContext: the server must outlive ctx; Stop ends it.
	cmd := exec.Command(p.bins.postgres,
		"-D", p.dataDir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(p.port),
		"-c", "unix_socket_directories="+socketDir,
		"-c", "synchronous_commit=off",
		"-c", "max_connections=200",
	)
	p.prepare(cmd)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("devenv: start postgres: %w", err)
	}
	proc := &pgProcess{cmd: cmd, exited: make(chan struct{}), logger: p.logger}
	p.proc = proc
	go func() {
		proc.waitErr = cmd.Wait()
		close(proc.exited)
	}()
	p.logger.Debug("postgres starting", "pid", cmd.Process.Pid, "port", p.port, "log", logPath)

	deadline := time.Now().Add(pgStartTimeout)
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(pingCtx, p.urlFor("postgres"))
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		select {
		case <-proc.exited:
			tail := logTail(logPath, logOffset)
			if strings.Contains(tail, "could not bind") || strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("devenv: %w: %w", errServerExited, errPortTaken)
			}
			return fmt.Errorf("devenv: %w (%v); log %s: %s", errServerExited, proc.waitErr, logPath, tail)
		case <-ctx.Done():
			p.abortStart()
			return fmt.Errorf("devenv: waiting for postgres: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.abortStart()
			return fmt.Errorf("devenv: postgres did not accept connections within %v: %w; log %s: %s", pgStartTimeout, err, logPath, logTail(logPath, logOffset))
		}
	}
}

func (p *Postgres) abortStart() {
	if err := p.proc.stop(context.Background()); err != nil {
		p.logger.Error("stop postgres after failed start", "error", err)
	}
}

func logTail(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if offset >= 0 && offset <= int64(len(b)) {
		b = b[offset:]
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}

func (p *Postgres) ensureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.urlFor("postgres"))
	if err != nil {
		return fmt.Errorf("devenv: connect to postgres: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("devenv: look up database %q: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("devenv: create database %q: %w", name, err)
	}
	p.logger.Info("created database", "name", name)
	return nil
}
