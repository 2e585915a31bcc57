package rayjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Upload is one local path PrepareRuntimeEnv replaced by a URI.
type Upload struct {
	Field string // working_dir or py_modules
	Path  string // as given
	URI   string
	// Uploaded is false when the cluster already had the package.
	Uploaded bool
	Size     int
	Warnings []string
}

// Prepared is a runtime_env ready to submit.
type Prepared struct {
	RuntimeEnv map[string]any
	Uploads    []Upload
}

// rayProtocols are the URI schemes Ray knows (runtime_env/protocol.py
// ProtocolsProvider.get_protocols); remoteProtocols are the ones it
// downloads from.
var (
	rayProtocols    = map[string]bool{"gcs": true, "conda": true, "pip": true, "uv": true, "https": true, "s3": true, "gs": true, "file": true}
	remoteProtocols = map[string]bool{"https": true, "s3": true, "gs": true, "file": true}
)

// pyScheme is the scheme Python's urllib.parse.urlparse finds in s ("" when
// none): letters, digits, "+", "-" and "." before the first ":", starting
// with a letter, lowercased.
func pyScheme(s string) string {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return ""
	}
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return ""
	}
	for _, r := range s[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return ""
		}
	}
	return strings.ToLower(s[:i])
}

// PrepareRuntimeEnv returns a copy of env with its local paths replaced as
// JobSubmissionClient.submit_job replaces them before it submits
// (SubmissionClient._upload_working_dir_if_needed and
// _upload_py_modules_if_needed, runtime_env/working_dir.py and
// py_modules.py, then RuntimeEnv(**env)):
//
//   - working_dir: a URI Ray knows passes through (a remote one must end in
//     .zip); a local directory is packaged (Package, with env's excludes)
//     and uploaded unless the cluster has it, and becomes its gcs:// URI.
//     A local .zip file is refused: the SDK's path for it writes to the GCS
//     directly and works only inside a Ray driver;
//   - py_modules: each URI passes through (a remote one must end in .zip or
//     .whl); a local directory is packaged with itself at the top of the
//     zip; a local .whl is uploaded as it is, as gcs://<file name>; a local
//     .py file is refused, as the SDK fails on it (it takes it for a
//     directory);
//   - pip or uv given as a string (or pip.packages as a string) name a local
//     requirements file, whose lines become the package list; conda given
//     as a .yaml/.yml file name is read as YAML (runtime_env/validation.py);
//   - then the rest of RuntimeEnv(**env).to_dict()'s rewriting (normalize):
//     pip and uv in their map form, empty fields dropped, config's defaults.
//
// Relative paths are relative to the process's working directory, as in
// Ray. Everything else in env is passed on unchanged.
func (c *Client) PrepareRuntimeEnv(ctx context.Context, env map[string]any, opts ...PackageOption) (*Prepared, error) {
	out, err := copyEnv(env)
	if err != nil {
		return nil, err
	}
	p := &Prepared{RuntimeEnv: out}
	excludes, err := stringList(out, "excludes")
	if err != nil {
		return nil, err
	}
	if wd, ok := out["working_dir"]; ok && wd != nil {
		s, ok := wd.(string)
		if !ok {
			return nil, fmt.Errorf("runtime_env working_dir: want a string (a local path or a remote URI), got %T", wd)
		}
		if scheme := pyScheme(s); rayProtocols[scheme] {
			if remoteProtocols[scheme] && !strings.HasSuffix(s, ".zip") {
				return nil, fmt.Errorf("runtime_env working_dir %q: only .zip files are supported for remote URIs", s)
			}
		} else {
			st, err := os.Stat(s)
			switch {
			case err == nil && st.IsDir():
			case err == nil && strings.HasSuffix(s, ".zip"):
				return nil, fmt.Errorf("runtime_env working_dir %s: a local .zip file cannot be uploaded through the Jobs API (Ray's SDK cannot either); unzip it and give the directory", s)
			default:
				return nil, fmt.Errorf("runtime_env working_dir %s must be an existing directory", s)
			}
			up, err := c.uploadDir(ctx, "working_dir", s, excludes, opts...)
			if err != nil {
				return nil, err
			}
			out["working_dir"] = up.URI
			p.Uploads = append(p.Uploads, *up)
		}
	}
	if pm, ok := out["py_modules"]; ok && pm != nil {
		list, ok := pm.([]any)
		if !ok {
			return nil, fmt.Errorf("runtime_env py_modules: want a list of local paths or URIs, got %T", pm)
		}
		uris := make([]any, 0, len(list))
		for i, m := range list {
			s, ok := m.(string)
			if !ok {
				return nil, fmt.Errorf("runtime_env py_modules[%d]: want a string (a local path or a URI), got %T", i, m)
			}
			if scheme := pyScheme(s); rayProtocols[scheme] {
				if remoteProtocols[scheme] && !strings.HasSuffix(s, ".zip") && !strings.HasSuffix(s, ".whl") {
					return nil, fmt.Errorf("runtime_env py_modules[%d] %q: only .zip or .whl files are supported for remote URIs", i, s)
				}
				uris = append(uris, s)
				continue
			}
			st, err := os.Stat(s)
			switch {
			case err == nil && st.IsDir():
				up, err := c.uploadDir(ctx, "py_modules", s, excludes, append(opts, WithParentDir())...)
				if err != nil {
					return nil, err
				}
				uris = append(uris, up.URI)
				p.Uploads = append(p.Uploads, *up)
			case err == nil && filepath.Ext(s) == ".whl":
				up, err := c.uploadWheel(ctx, s)
				if err != nil {
					return nil, err
				}
				uris = append(uris, up.URI)
				p.Uploads = append(p.Uploads, *up)
			case err == nil && filepath.Ext(s) == ".py":
				return nil, fmt.Errorf("runtime_env py_modules[%d] %s: a single .py file cannot be uploaded through the Jobs API (Ray's SDK fails on it too); put it in a directory and give that", i, s)
			case err != nil:
				return nil, fmt.Errorf("runtime_env py_modules[%d] %s: %w", i, s, err)
			default:
				return nil, fmt.Errorf("runtime_env py_modules[%d]: must be a .py file, a directory, or a .whl file; got %s", i, s)
			}
		}
		out["py_modules"] = uris
	}
	if err := normalize(out); err != nil {
		return nil, err
	}
	if cd, ok := out["conda"].(string); ok && (filepath.Ext(cd) == ".yaml" || filepath.Ext(cd) == ".yml") {
		b, err := os.ReadFile(cd)
		if err != nil {
			return nil, fmt.Errorf("runtime_env conda: can't find conda YAML file %s: %w", cd, err)
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("runtime_env conda: failed to read conda file %s: %w", cd, err)
		}
		out["conda"], err = jsonRoundTrip(v)
		if err != nil {
			return nil, fmt.Errorf("runtime_env conda %s: %w", cd, err)
		}
	}
	return p, nil
}

func (c *Client) uploadDir(ctx context.Context, field, dir string, excludes []string, opts ...PackageOption) (*Upload, error) {
	pkg, err := Package(ctx, dir, excludes, opts...)
	if err != nil {
		return nil, fmt.Errorf("runtime_env %s: %w", field, err)
	}
	up := &Upload{Field: field, Path: dir, URI: pkg.URI, Size: len(pkg.Zip), Warnings: pkg.Warnings}
	exists, err := c.PackageExists(ctx, pkg.URI)
	if err != nil {
		return nil, fmt.Errorf("runtime_env %s %s: %w", field, dir, err)
	}
	if !exists {
		if err := c.UploadPackage(ctx, pkg.URI, pkg.Zip); err != nil {
			return nil, fmt.Errorf("runtime_env %s %s: %w", field, dir, err)
		}
		up.Uploaded = true
	}
	return up, nil
}

// uploadWheel uploads a local wheel under gcs://<its file name>
// (packaging.py get_uri_for_package: a wheel's name is content-addressed
// enough).
func (c *Client) uploadWheel(ctx context.Context, file string) (*Upload, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("runtime_env py_modules %s: %w", file, err)
	}
	uri := "gcs://" + filepath.Base(file)
	up := &Upload{Field: "py_modules", Path: file, URI: uri, Size: len(data)}
	exists, err := c.PackageExists(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("runtime_env py_modules %s: %w", file, err)
	}
	if !exists {
		if err := c.UploadPackage(ctx, uri, data); err != nil {
			return nil, fmt.Errorf("runtime_env py_modules %s: %w", file, err)
		}
		up.Uploaded = true
	}
	return up, nil
}

// normalize rewrites env as RuntimeEnv(**env).to_dict() does in
// submit_job (runtime_env/runtime_env.py __setitem__ with
// runtime_env/validation.py's parsers): pip and uv become {"packages": […],
// "pip_check"/"uv_check": false, …} with duplicates dropped (a string names
// a local requirements file, read here), an empty list removes the field;
// excludes and env_vars that are empty are removed, env_vars must map
// strings to strings; config gets its defaults; pip, uv and conda exclude
// each other.
func normalize(env map[string]any) error {
	n := 0
	for _, k := range []string{"pip", "uv", "conda"} {
		if v, ok := env[k]; ok && v != nil {
			n++
		}
	}
	if n > 1 {
		return errors.New("runtime_env: the 'pip' field, 'uv' field, and 'conda' field cannot be specified at the same time")
	}
	for _, k := range []string{"pip", "uv"} {
		v, ok := env[k]
		if !ok || v == nil {
			continue
		}
		r, err := parsePackages(k, v)
		if err != nil {
			return err
		}
		if r == nil {
			delete(env, k)
		} else {
			env[k] = r
		}
	}
	if v, ok := env["excludes"].([]any); ok && len(v) == 0 {
		delete(env, "excludes")
	}
	if ev, ok := env["env_vars"]; ok && ev != nil {
		m, ok := ev.(map[string]any)
		if !ok {
			return fmt.Errorf("runtime_env env_vars: want a map of strings, got %T", ev)
		}
		for k, v := range m {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("runtime_env env_vars[%q]: want a string, got %T (%v)", k, v, v)
			}
		}
		if len(m) == 0 {
			delete(env, "env_vars")
		}
	}
	if cv, ok := env["config"]; ok && cv != nil {
		m, ok := cv.(map[string]any)
		if !ok {
			return fmt.Errorf("runtime_env config: want a map, got %T", cv)
		}
		// RuntimeEnvConfig: the three known fields, with their defaults
		// (unknown ones are dropped, as Ray does with a warning).
		c := map[string]any{"setup_timeout_seconds": float64(600), "eager_install": true, "log_files": []any{}}
		for k := range c {
			if v, ok := m[k]; ok && v != nil {
				c[k] = v
			}
		}
		if t, ok := c["setup_timeout_seconds"].(float64); !ok || t != float64(int64(t)) || (t <= 0 && t != -1) {
			return fmt.Errorf("runtime_env config.setup_timeout_seconds: want an integer greater than zero or -1, got %v", c["setup_timeout_seconds"])
		}
		if _, ok := c["eager_install"].(bool); !ok {
			return fmt.Errorf("runtime_env config.eager_install: want a boolean, got %v", c["eager_install"])
		}
		env["config"] = c
	}
	return nil
}

// parsePackages is parse_and_validate_pip / parse_and_validate_uv; nil
// means no packages (the field is dropped).
func parsePackages(key string, v any) (map[string]any, error) {
	check := key + "_check"
	var r map[string]any
	switch x := v.(type) {
	case string:
		l, err := requirementsFile(key, x)
		if err != nil {
			return nil, err
		}
		r = map[string]any{"packages": l, check: false}
	case []any:
		for i, p := range x {
			if _, ok := p.(string); !ok {
				return nil, fmt.Errorf("runtime_env %s[%d]: want a string, got %T", key, i, p)
			}
		}
		r = map[string]any{"packages": x, check: false}
	case map[string]any:
		allowed := map[string]bool{"packages": true, "pip_check": true, "pip_version": true}
		if key == "uv" {
			allowed = map[string]bool{"packages": true, "uv_check": true, "uv_version": true, "uv_pip_install_options": true}
		}
		r = map[string]any{}
		for k, e := range x {
			if !allowed[k] {
				return nil, fmt.Errorf("runtime_env %s: unknown field %q", key, k)
			}
			r[k] = e
		}
		if c, ok := x[check]; ok {
			if _, ok := c.(bool); !ok {
				return nil, fmt.Errorf("runtime_env %s.%s: want a boolean, got %T", key, check, c)
			}
		} else {
			r[check] = false
		}
		if key == "uv" {
			if _, ok := x["uv_pip_install_options"]; !ok {
				r["uv_pip_install_options"] = []any{"--no-cache"}
			}
		}
		switch pk := x["packages"].(type) {
		case nil:
			return nil, fmt.Errorf("runtime_env %s must include field 'packages'", key)
		case string:
			if key != "pip" {
				return nil, fmt.Errorf("runtime_env uv.packages: want a list, got a string")
			}
			l, err := requirementsFile(key, pk)
			if err != nil {
				return nil, err
			}
			r["packages"] = l
		case []any:
		default:
			return nil, fmt.Errorf("runtime_env %s.packages: want a list, got %T", key, pk)
		}
	default:
		return nil, fmt.Errorf("runtime_env %s: want a requirements file, a list or a map, got %T", key, v)
	}
	// Duplicates dropped, first kept.
	seen := map[string]bool{}
	var out []any
	for _, p := range r["packages"].([]any) {
		s, _ := p.(string)
		if !seen[s] {
			seen[s] = true
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	r["packages"] = out
	return r, nil
}

// requirementsFile is _handle_local_deps_requirement_file: the file's
// text, stripped, split at "\n".
func requirementsFile(key, file string) ([]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("runtime_env %s: %s is not a valid file: %w", key, file, err)
	}
	var l []any
	for _, line := range strings.Split(pyStrip(string(b)), "\n") {
		l = append(l, line)
	}
	return l, nil
}

func stringList(env map[string]any, key string) ([]string, error) {
	v, ok := env[key]
	if !ok || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("runtime_env %s: want a list of strings, got %T", key, v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("runtime_env %s[%d]: want a string, got %T", key, i, x)
		}
		out[i] = s
	}
	return out, nil
}

// copyEnv deep-copies env through JSON, so the caller's map is never
// changed and every value has the types encoding/json gives.
func copyEnv(env map[string]any) (map[string]any, error) {
	if env == nil {
		return map[string]any{}, nil
	}
	v, err := jsonRoundTrip(env)
	if err != nil {
		return nil, fmt.Errorf("runtime_env: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("runtime_env: want a map, got %T", v)
	}
	return m, nil
}

func jsonRoundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not JSON-serialisable: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
