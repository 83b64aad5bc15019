package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/questiond/questiond/internal/fakellm"
	"github.com/questiond/questiond/internal/opencodenpm"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// pendingTimeout bounds how long OpenCode may take to have its questions
// pending: each is a session, a prompt and a model turn, with a git
// snapshot of the project (200 took 13 s on an idle machine when the golden
// recordings were made, 2.5 min on this one shared with other work).
const pendingTimeout = 10 * time.Minute

// startOpencode installs the pinned opencode-ai (or reuses the copy in the
// user cache that e2e/tui installed) and runs `opencode serve` on loopback,
// offline: home and XDG directories of its own, no update check, no models
// or plugin downloads, npm pointed at a closed port, and a project whose
// only model is the fake one, which makes each prompted session ask
// workload.SeedForm's questions with OpenCode's question tool.
func startOpencode(cfg *config) (*target, error) {
	bin, err := opencodenpm.Install(cfg.opencodeVersion, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	})
	if err != nil {
		return nil, fmt.Errorf("cannot install opencode-ai@%s, so nothing to compare with: %w", cfg.opencodeVersion, err)
	}
	version, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", bin, err)
	}
	cfg.opencodeFound = strings.TrimSpace(string(version))

	llm, err := fakellm.Start(askSeedForm)
	if err != nil {
		return nil, err
	}
	stopLLM := llm.Close
	root := filepath.Join(cfg.work, "opencode")
	project := filepath.Join(root, "project")
	env, err := opencodenpm.OfflineEnv(root)
	if err != nil {
		stopLLM()
		return nil, err
	}
	if err := writeProject(project, llm); err != nil {
		stopLLM()
		return nil, err
	}
	port, err := launch.FreePort()
	if err != nil {
		stopLLM()
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--port", strconv.Itoa(port), "--hostname", "127.0.0.1")
	cmd.Dir, cmd.Env = project, env
	p, _, err := startProcess("opencode", cmd, filepath.Join(cfg.work, "opencode.log"), nil)
	if err != nil {
		stopLLM()
		return nil, err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitHTTP(p, base+"/doc"); err != nil {
		_ = p.stop()
		stopLLM()
		return nil, err
	}
	return &target{name: "opencode", base: base, proc: p, cleanup: stopLLM, slowToAsk: true,
		makePending: func(client *http.Client, n int) error { return promptOpencode(client, base, n) },
		settle:      func(client *http.Client) error { return waitSessionsIdle(client, base) }}, nil
}

// writeProject makes the directory OpenCode serves: a git repository with
// a config naming the fake model as the only one and allowing its question
// tool.
func writeProject(dir string, llm *fakellm.Server) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if git, err := exec.LookPath("git"); err == nil {
		_ = exec.Command(git, "-C", dir, "init", "-q").Run() // a project root, as OpenCode usually has
	}
	config := map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"model": "fake/" + fakellm.ModelID, "small_model": "fake/" + fakellm.ModelID, "enabled_providers": []string{"fake"},
		"permission": map[string]string{"question": "allow"},
		"provider":   map[string]any{"fake": llm.Config()},
	}
	return os.WriteFile(filepath.Join(dir, "opencode.json"), mustJSON(config), 0o644)
}

// promptOpencode opens n sessions and prompts each once; the fake model
// answers each prompt with a question, so n questions become pending.
func promptOpencode(client *http.Client, base string, n int) error {
	for i := range n {
		var session struct{ ID string }
		body, err := postJSON(client, base+"/session", mustJSON(map[string]string{"title": fmt.Sprintf("bench %d", i)}))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &session); err != nil || session.ID == "" {
			return fmt.Errorf("POST /session answered %.300s", body)
		}
		prompt := mustJSON(map[string]any{
			"parts": []map[string]string{{"type": "text", "text": fmt.Sprintf("bench %d", i)}},
			"model": map[string]string{"providerID": "fake", "modelID": "fake-model"},
		})
		if _, err := postJSON(client, base+"/session/"+session.ID+"/prompt_async", prompt); err != nil {
			return err
		}
	}
	_, err := waitPending(client, base, n, pendingTimeout)
	return err
}

// waitSessionsIdle polls GET /session/status until no session is busy:
// each answer sets off one more model turn in its session.
func waitSessionsIdle(client *http.Client, base string) error {
	deadline := time.Now().Add(pendingTimeout)
	for {
		body, err := getBody(client, base+"/session/status")
		if err != nil {
			return err
		}
		var status map[string]struct{ Type string }
		if err := json.Unmarshal(body, &status); err != nil {
			return fmt.Errorf("GET /session/status: %w in %.300s", err, body)
		}
		busy := 0
		for _, s := range status {
			if s.Type != "idle" {
				busy++
			}
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d sessions still busy after %v", busy, pendingTimeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func postJSON(client *http.Client, url string, body []byte) ([]byte, error) {
	res, err := client.Post(url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out json.RawMessage
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusNoContent {
		return nil, fmt.Errorf("POST %s: status %d: %.300s", url, res.StatusCode, out)
	}
	return out, nil
}
