package integration

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The container files (Dockerfile, .dockerignore, docker-compose.yml),
// checked without a Docker engine (none runs on the CI machines; `docker`
// there is only a client):
//
//   - TestDockerfile parses the Dockerfile and checks what the image must
//     be: a golang build stage, the static build of the main package and
//     of examples/webhook, a distroless/scratch runtime, a non-root USER,
//     EXPOSE 6379, VOLUME /data, bind 0.0.0.0 and dir /data, a HEALTHCHECK
//     with `oncekv ping`; and that .dockerignore keeps every package the
//     binaries need in the build context.
//   - TestDockerBuildStatic runs the Dockerfile's own `go build` lines and
//     checks the binaries are static; then runs the server and the image's
//     HEALTHCHECK command against it, as the container would.
//   - TestComposeConfig validates docker-compose.yml with Debian's
//     docker-compose (`config -q`, no engine needed) and checks the
//     services; TestComposeStackWithoutEngine runs what the compose file
//     describes as plain processes on 127.0.0.1: the server with the
//     service's command, its healthcheck, and the webhook app with the
//     service's environment.

// dockerInstr is one Dockerfile instruction.
type dockerInstr struct {
	Cmd   string // upper case: FROM, RUN, …
	Args  string
	Stage string // the stage's name (AS …), or its index
	Line  int
}

// parseDockerfile reads the instructions of a Dockerfile: comments and
// blank lines dropped, continuation lines joined.
func parseDockerfile(t *testing.T, path string) []dockerInstr {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []dockerInstr
	var cur strings.Builder
	start, stage, nstage := 0, "", 0
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		text := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		cmd = strings.ToUpper(cmd)
		args = strings.TrimSpace(args)
		if cmd == "FROM" {
			stage = strconv.Itoa(nstage)
			nstage++
			if f := strings.Fields(args); len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stage = f[2]
			}
		}
		out = append(out, dockerInstr{Cmd: cmd, Args: args, Stage: stage, Line: start})
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: the last instruction ends with a continuation", path)
	}
	return out
}

// goBuild is one `go build` of the Dockerfile.
type goBuild struct {
	Env  []string // NAME=value assignments before `go`
	Args []string // after `go build`, with -o's value and the package
	Out  string
	Pkg  string
}

// shellWords splits a simple shell command: words, with double-quoted
// parts kept together (enough for the Dockerfile's RUN lines).
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// dockerGoBuilds extracts the `go build` commands of the build stage's RUN
// instructions.
func dockerGoBuilds(t *testing.T, instrs []dockerInstr) []goBuild {
	t.Helper()
	var out []goBuild
	for _, in := range instrs {
		if in.Cmd != "RUN" || in.Stage != "build" {
			continue
		}
		for _, part := range strings.Split(in.Args, "&&") {
			w := shellWords(strings.TrimSpace(part))
			i := slices.Index(w, "go")
			if i < 0 || i+1 >= len(w) || w[i+1] != "build" {
				continue
			}
			b := goBuild{Env: w[:i], Args: w[i+2:]}
			for j := 0; j < len(b.Args); j++ {
				if b.Args[j] == "-o" && j+1 < len(b.Args) {
					b.Out = b.Args[j+1]
					j++
					continue
				}
				if !strings.HasPrefix(b.Args[j], "-") {
					b.Pkg = b.Args[j]
				}
			}
			out = append(out, b)
		}
	}
	return out
}

func repoFile(t *testing.T, name string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, name)
}

// stageInstrs returns the instructions of one stage.
func stageInstrs(instrs []dockerInstr, stage string) []dockerInstr {
	var out []dockerInstr
	for _, in := range instrs {
		if in.Stage == stage {
			out = append(out, in)
		}
	}
	return out
}

func findInstr(instrs []dockerInstr, cmd string) []string {
	var out []string
	for _, in := range instrs {
		if in.Cmd == cmd {
			out = append(out, in.Args)
		}
	}
	return out
}

// jsonArgs parses an exec-form argument list (["a", "b"]).
func jsonArgs(t *testing.T, s string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q is not an exec-form list: %v", s, err)
	}
	return v
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	instrs := parseDockerfile(t, repoFile(t, "Dockerfile"))

	// The build stage: golang at least as new as go.mod asks.
	var froms []dockerInstr
	for _, in := range instrs {
		if in.Cmd == "FROM" {
			froms = append(froms, in)
		}
	}
	if len(froms) < 2 || froms[0].Stage != "build" || !strings.HasPrefix(froms[0].Args, "golang:") {
		t.Fatalf("the first stage must be `FROM golang:… AS build`, got %+v", froms)
	}
	goVersion := ""
	for _, in := range instrs {
		if in.Cmd == "ARG" && strings.HasPrefix(in.Args, "GO_VERSION=") {
			goVersion = strings.TrimPrefix(in.Args, "GO_VERSION=")
		}
	}
	gomod, err := os.ReadFile(repoFile(t, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(gomod))
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	if want := m[1] + "." + m[2]; goVersion != want && !strings.HasPrefix(goVersion, want+".") {
		t.Errorf("ARG GO_VERSION=%s, but go.mod asks for go %s", goVersion, want)
	}

	// The builds: static, stripped, reproducible paths; the server's main
	// package (the module root, as BuildOncekv builds it) and the example.
	builds := dockerGoBuilds(t, instrs)
	pkgs := map[string]string{}
	for _, b := range builds {
		if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Args, "-trimpath") || !slices.Contains(b.Args, "-ldflags=-s -w") {
			t.Errorf("go build %q (env %q): want CGO_ENABLED=0 go build -trimpath -ldflags=\"-s -w\"", b.Args, b.Env)
		}
		pkgs[b.Pkg] = b.Out
	}
	if want := map[string]string{".": "/out/oncekv", "./examples/webhook": "/out/webhook"}; !equalMaps(pkgs, want) {
		t.Errorf("the build stage builds %v, want %v", pkgs, want)
	}

	// The server's stage is the last one (the default target).
	last := froms[len(froms)-1]
	if last.Stage != "oncekv" {
		t.Errorf("the last stage is %q, want oncekv (the default target)", last.Stage)
	}
	for _, stage := range []string{"oncekv", "webhook"} {
		in := stageInstrs(instrs, stage)
		if len(in) == 0 {
			t.Errorf("no stage %q", stage)
			continue
		}
		base := strings.Fields(in[0].Args)[0]
		if !strings.HasPrefix(base, "gcr.io/distroless/static") && base != "scratch" {
			t.Errorf("stage %s runs on %s, want distroless/static or scratch", stage, base)
		}
		users := findInstr(in, "USER")
		if len(users) == 0 {
			t.Errorf("stage %s has no USER", stage)
		}
		for _, u := range users {
			name, _, _ := strings.Cut(u, ":")
			if name == "root" || name == "0" {
				t.Errorf("stage %s: USER %s is root", stage, u)
			}
		}
	}
	srv := stageInstrs(instrs, "oncekv")
	if e := findInstr(srv, "EXPOSE"); !slices.Contains(e, "6379") {
		t.Errorf("EXPOSE %v, want 6379", e)
	}
	if v := findInstr(srv, "VOLUME"); !slices.Contains(v, "/data") && !slices.Contains(v, `["/data"]`) {
		t.Errorf("VOLUME %v, want /data", v)
	}
	env := strings.Join(findInstr(srv, "ENV"), " ")
	for _, want := range []string{"ONCEKV_BIND=0.0.0.0", "ONCEKV_DIR=/data"} {
		if !strings.Contains(env, want) {
			t.Errorf("ENV %q lacks %s", env, want)
		}
	}
	if ep := findInstr(srv, "ENTRYPOINT"); len(ep) != 1 || !slices.Equal(jsonArgs(t, ep[0]), []string{"/oncekv"}) {
		t.Errorf("ENTRYPOINT %v, want [\"/oncekv\"]", ep)
	}
	if hc := dockerHealthcheck(t, srv); len(hc) < 2 || hc[0] != "/oncekv" || hc[1] != "ping" {
		t.Errorf("HEALTHCHECK CMD %q, want /oncekv ping …", hc)
	}
	copies := strings.Join(findInstr(srv, "COPY"), "\n")
	for _, want := range []string{"--from=build /out/oncekv /oncekv", "--chown=65532:65532 /out/data /data"} {
		if !strings.Contains(copies, want) {
			t.Errorf("COPY lines %q lack %q", copies, want)
		}
	}
	if !strings.Contains(strings.Join(findInstr(stageInstrs(instrs, "webhook"), "COPY"), "\n"), "--from=build /out/webhook /webhook") {
		t.Error("the webhook stage does not copy /out/webhook")
	}

	checkDockerignore(t)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// dockerHealthcheck returns the exec-form command of the stage's
// HEALTHCHECK.
func dockerHealthcheck(t *testing.T, stage []dockerInstr) []string {
	t.Helper()
	hc := findInstr(stage, "HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("HEALTHCHECK %v, want one", hc)
	}
	_, cmd, ok := strings.Cut(hc[0], "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %q has no CMD", hc[0])
	}
	return jsonArgs(t, strings.TrimSpace(cmd))
}

// checkDockerignore: the build context keeps go.mod, go.sum and the
// directory of every package the two binaries are built from.
func checkDockerignore(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(repoFile(t, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.TrimPrefix(l, "/"))
		}
	}
	root := filepath.Dir(repoFile(t, "go.mod"))
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.Dir}}", ".", "./examples/webhook")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	paths := []string{"go.mod", "go.sum"}
	for _, dir := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
			paths = append(paths, filepath.Join(rel, "x.go"))
		}
	}
	for _, p := range paths {
		parts := strings.Split(p, string(filepath.Separator))
		for _, pat := range patterns {
			for i := 1; i <= len(parts); i++ {
				prefix := strings.Join(parts[:i], "/")
				if ok, _ := filepath.Match(pat, prefix); ok || (strings.HasPrefix(pat, "**/") && parts[i-1] == strings.TrimPrefix(pat, "**/")) {
					t.Errorf(".dockerignore pattern %q excludes %s, which the image build needs", pat, p)
				}
			}
		}
	}
}

// buildAsDockerfile runs the Dockerfile's `go build` commands, with their
// outputs in a temporary directory, and returns the binaries by their
// Dockerfile path ("/out/oncekv" → local path).
func buildAsDockerfile(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Dir(repoFile(t, "go.mod"))
	builds := dockerGoBuilds(t, parseDockerfile(t, filepath.Join(root, "Dockerfile")))
	dir := t.TempDir()
	bins := map[string]string{}
	for _, b := range builds {
		local := filepath.Join(dir, filepath.Base(b.Out))
		args := slices.Clone(b.Args)
		args[slices.Index(args, "-o")+1] = local
		cmd := exec.Command("go", append([]string{"build"}, args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), b.Env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s go build %s: %v\n%s", strings.Join(b.Env, " "), strings.Join(args, " "), err, out)
		}
		bins[b.Out] = local
	}
	return bins
}

// TestDockerBuildStatic: the Dockerfile's builds give static binaries that
// run on an image with no libc; the server answers the image's HEALTHCHECK
// when configured as the image configures it (environment only).
func TestDockerBuildStatic(t *testing.T) {
	t.Parallel()
	bins := buildAsDockerfile(t)
	for out, local := range bins {
		f, err := elf.Open(local)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a program interpreter: not static", out)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v", out, libs)
		}
		// -ldflags="-s -w": no symbol table, no DWARF. (With -trimpath, Go
		// leaves -ldflags out of the build info.)
		for _, sec := range f.Sections {
			if sec.Name == ".symtab" || strings.HasPrefix(sec.Name, ".debug_") || strings.HasPrefix(sec.Name, ".zdebug_") {
				t.Errorf("%s has a %s section: not built with -ldflags=\"-s -w\"", out, sec.Name)
			}
		}
		f.Close()
		info, err := exec.Command("go", "version", "-m", local).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath=true"} {
			if !strings.Contains(string(info), want) {
				t.Errorf("%s: build info lacks %s:\n%s", out, want, info)
			}
		}
	}
	server := bins["/out/oncekv"]
	if server == "" {
		t.Fatal("the Dockerfile does not build /out/oncekv")
	}

	// As in the container: configured by environment (ONCEKV_DIR, and a
	// password by ONCEKV_REQUIREPASS), no flags but the port; here on
	// 127.0.0.1, not the image's 0.0.0.0.
	port := FreePort(t)
	env := []string{"ONCEKV_BIND=127.0.0.1", "ONCEKV_DIR=" + t.TempDir(), "ONCEKV_PORT=" + strconv.Itoa(port), "ONCEKV_REQUIREPASS=s3cret"}
	startBinary(t, server, port, env)
	hc := dockerHealthcheck(t, stageInstrs(parseDockerfile(t, repoFile(t, "Dockerfile")), "oncekv"))
	if code, out := runBinary(t, server, env, hc[1:]...); code != 0 || !strings.Contains(out, "PONG") {
		t.Errorf("HEALTHCHECK %q: exit %d, %q", hc, code, out)
	}
	// Without the password it is unhealthy.
	if code, out := runBinary(t, server, []string{"ONCEKV_PORT=" + strconv.Itoa(port)}, hc[1:]...); code != 1 {
		t.Errorf("HEALTHCHECK without the password: exit %d, %q", code, out)
	}
}

// startBinary runs bin with env until the test ends, waiting for its port.
func startBinary(t *testing.T, bin string, port int, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv(env...)
	p, err := startProc(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitReady(p, addrOf(port), startTimeout); err != nil {
		p.kill()
		t.Fatalf("%s %q: %v\n%s", bin, args, err, p.tail(4000))
	}
	t.Cleanup(func() {
		if !p.stop(syscall.SIGTERM, stopTimeout) {
			t.Errorf("%s did not exit on SIGTERM", bin)
			p.kill()
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", bin, p.tail(4000))
		}
	})
	return p
}

// runBinary runs bin to completion (bounded) and returns its exit code and
// output.
func runBinary(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv(env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %q did not exit within 30s", bin, args)
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("%s %q: %v", bin, args, err)
	return -1, ""
}

// composeFile is the part of `docker-compose config` the tests read.
type composeFile struct {
	Services map[string]struct {
		Build struct {
			Context string `json:"context"`
			Target  string `json:"target"`
		} `json:"build"`
		Command     []string          `json:"command"`
		Environment map[string]string `json:"environment"`
		Volumes     []string          `json:"volumes"`
		Ulimits     struct {
			Nofile struct {
				Soft, Hard int
			} `json:"nofile"`
		} `json:"ulimits"`
		Healthcheck struct {
			Test []string `json:"test"`
		} `json:"healthcheck"`
		DependsOn map[string]struct {
			Condition string `json:"condition"`
		} `json:"depends_on"`
	} `json:"services"`
}

// dockerCompose runs docker-compose with args on the repository's
// docker-compose.yml and the given environment (on top of the test's,
// without REDIS_PASSWORD).
func dockerCompose(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose not found: install it with `apt-get install -y docker-compose` (./test.sh does); it validates docker-compose.yml without a Docker engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-f", repoFile(t, "docker-compose.yml")}, args...)...)
	cmd.Dir = filepath.Dir(repoFile(t, "go.mod"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_PASSWORD=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("docker-compose %q did not finish within 60s", args)
	}
	return stdout.String(), stderr.String(), err
}

// composeConfig is the normalized compose file, as JSON (docker-compose
// 1.29 prints YAML; Debian's package depends on python3-yaml, which
// converts it).
func composeConfig(t *testing.T, password string) composeFile {
	t.Helper()
	yml, stderr, err := dockerCompose(t, []string{"REDIS_PASSWORD=" + password}, "config")
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, stderr)
	}
	cmd := exec.Command("python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)")
	cmd.Stdin = strings.NewReader(yml)
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("converting docker-compose config to JSON needs python3-yaml (a dependency of Debian's docker-compose): %v", err)
	}
	var cf composeFile
	if err := json.Unmarshal(js, &cf); err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, js)
	}
	return cf
}

func TestComposeConfig(t *testing.T) {
	t.Parallel()
	if _, stderr, err := dockerCompose(t, []string{"REDIS_PASSWORD=test-password"}, "config", "-q"); err != nil {
		t.Fatalf("docker-compose config -q: %v\n%s", err, stderr)
	}
	// The password is required, not defaulted.
	if _, stderr, err := dockerCompose(t, nil, "config", "-q"); err == nil || !strings.Contains(stderr, "REDIS_PASSWORD") {
		t.Errorf("docker-compose config without REDIS_PASSWORD: %v\n%s", err, stderr)
	}

	cf := composeConfig(t, "test-password")
	stages := map[string]bool{}
	for _, in := range parseDockerfile(t, repoFile(t, "Dockerfile")) {
		if in.Cmd == "FROM" {
			stages[in.Stage] = true
		}
	}
	redis, ok := cf.Services["redis"]
	if !ok {
		t.Fatalf("no service named redis (the drop-in's name): %v", cf.Services)
	}
	app, ok := cf.Services["webhook"]
	if !ok {
		t.Fatal("no webhook service")
	}
	for name, target := range map[string]string{"redis": redis.Build.Target, "webhook": app.Build.Target} {
		if !stages[target] {
			t.Errorf("service %s builds target %q, which the Dockerfile does not have", name, target)
		}
	}
	if i := slices.Index(redis.Command, "--requirepass"); i < 0 || i+1 >= len(redis.Command) || redis.Command[i+1] != "test-password" {
		t.Errorf("redis command %q does not set requirepass from REDIS_PASSWORD", redis.Command)
	}
	if !slices.ContainsFunc(redis.Volumes, func(v string) bool { return strings.Contains(v, ":/data") }) {
		t.Errorf("redis volumes %q: none on /data", redis.Volumes)
	}
	// Badger keeps a file open per table of 2 MiB (store/badgerdb,
	// tableSizeMultiplier): Docker's usual soft limit of 1,024 is 2 GB of
	// tables.
	if n := redis.Ulimits.Nofile; n.Soft < 65536 || n.Hard < n.Soft {
		t.Errorf("redis ulimits nofile %+v, want a soft limit of 65,536 or more", n)
	}
	if hc := redis.Healthcheck.Test; len(hc) < 3 || hc[0] != "CMD" || hc[1] != "/oncekv" || hc[2] != "ping" {
		t.Errorf("redis healthcheck %q, want CMD /oncekv ping …", hc)
	}
	if d := app.DependsOn["redis"]; d.Condition != "service_healthy" {
		t.Errorf("webhook depends_on redis: %+v, want condition service_healthy", app.DependsOn)
	}
	if app.Environment["REDIS_ADDR"] != "redis:6379" || app.Environment["REDIS_PASSWORD"] != "test-password" {
		t.Errorf("webhook environment %v", app.Environment)
	}
}

// TestComposeStackWithoutEngine runs the compose file's services as plain
// processes on 127.0.0.1: the server with the redis service's command (and
// the image's environment), its healthcheck command, then the webhook app
// with its service's environment, which must dedupe a delivery.
func TestComposeStackWithoutEngine(t *testing.T) {
	t.Parallel()
	cf := composeConfig(t, "compose-secret")
	bins := buildAsDockerfile(t)
	redis, app := cf.Services["redis"], cf.Services["webhook"]

	port := FreePort(t)
	image := []string{"ONCEKV_BIND=127.0.0.1", "ONCEKV_DIR=" + t.TempDir()} // the image's ENV, on loopback
	startBinary(t, bins["/out/oncekv"], port, image, append(slices.Clone(redis.Command), "--port", strconv.Itoa(port))...)
	hc := redis.Healthcheck.Test
	if len(hc) < 2 || hc[1] != "/oncekv" {
		t.Fatalf("healthcheck %q", hc)
	}
	if code, out := runBinary(t, bins["/out/oncekv"], []string{"ONCEKV_PORT=" + strconv.Itoa(port)}, hc[2:]...); code != 0 {
		t.Fatalf("the compose healthcheck %q fails: exit %d, %s", hc, code, out)
	}

	httpPort := FreePort(t)
	var env []string
	for k, v := range app.Environment {
		if k == "REDIS_ADDR" {
			v = addrOf(port) // the service name resolves to the container; here, to the process
		}
		env = append(env, k+"="+v)
	}
	env = append(env, "LISTEN_ADDR="+addrOf(httpPort))
	cmd := exec.Command(bins["/out/webhook"])
	cmd.Env = childEnv(env...)
	p, err := startProc(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.stop(syscall.SIGTERM, stopTimeout) {
			t.Error("the webhook app did not exit on SIGTERM")
			p.kill()
		}
		if t.Failed() {
			t.Logf("webhook output:\n%s", p.tail(4000))
		}
	})
	base := "http://" + addrOf(httpPort)
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("the webhook app is not healthy: %v\n%s", err, p.tail(4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	post := func() (string, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/webhook", strings.NewReader(`{"order":42}`))
		req.Header.Set("X-Delivery-ID", "compose-1")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /webhook: %d %s", resp.StatusCode, b)
		}
		return resp.Header.Get("Idempotent-Replayed"), string(b)
	}
	r1, b1 := post()
	r2, b2 := post()
	if r1 != "false" || r2 != "true" || b1 != b2 {
		t.Errorf("first %s %s, retry %s %s: want the same receipt, replayed the second time", r1, b1, r2, b2)
	}
}
