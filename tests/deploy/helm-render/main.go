// helm-render renders a Helm chart the way `helm template` does, for CI machines that cannot
// download Helm (it is not packaged in Debian). It uses the same engine Helm uses: Go's
// text/template with the Sprig function library (Debian: golang-github-masterminds-sprig-dev),
// plus Helm's own additions (include, tpl, required, toYaml, fromYaml, toJson, lookup).
//
// Limitations compared with real Helm, stated so nobody trusts more than is there: no
// subcharts, no .Files, no hooks, no values.schema.json, `lookup` always returns an empty map,
// and --set is not supported (use values files).
//
// Usage: helm-render [-f values.yaml]... [--name NAME] [--namespace NS] CHART_DIR
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v3"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

func readYAMLMap(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if out == nil {
		out = map[string]interface{}{}
	}
	return out, nil
}

// coalesce merges src over dst like Helm: maps merge recursively, a null in src deletes the key.
func coalesce(dst, src map[string]interface{}) map[string]interface{} {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			dst[k] = coalesce(dm, sm)
		} else {
			dst[k] = sv
		}
	}
	return dst
}

func toYAML(v interface{}) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func main() {
	var files valueFiles
	flag.Var(&files, "f", "values file (repeatable, later files win)")
	name := flag.String("name", "release", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kubeVersion := flag.String("kube-version", "v1.30.0", "Capabilities.KubeVersion")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: helm-render [-f values.yaml]... [--name N] [--namespace NS] CHART_DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), files, *name, *namespace, *kubeVersion); err != nil {
		fmt.Fprintln(os.Stderr, "helm-render:", err)
		os.Exit(1)
	}
}

func run(chartDir string, files []string, name, namespace, kubeVersion string) error {
	chart, err := readYAMLMap(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	for _, key := range []string{"apiVersion", "name", "version"} {
		if _, ok := chart[key]; !ok {
			return fmt.Errorf("Chart.yaml: missing %s", key)
		}
	}
	values, err := readYAMLMap(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		user, err := readYAMLMap(f)
		if err != nil {
			return err
		}
		values = coalesce(values, user)
	}

	str := func(k string) string { s, _ := chart[k].(string); return s }
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": name, "Namespace": namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Chart": map[string]interface{}{
			"Name": str("name"), "Version": fmt.Sprint(chart["version"]), "AppVersion": fmt.Sprint(chart["appVersion"]),
		},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{"Version": kubeVersion, "GitVersion": kubeVersion},
		},
		"Template": map[string]interface{}{"BasePath": str("name") + "/templates"},
	}

	root := template.New("chart")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env") // Helm removes these: a chart must not depend on the renderer's environment
	delete(funcs, "expandenv")
	includeDepth := 0
	funcs["include"] = func(tname string, data interface{}) (string, error) {
		includeDepth++
		defer func() { includeDepth-- }()
		if includeDepth > 100 {
			return "", errors.New("include: recursion too deep")
		}
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, tname, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["toJson"] = func(v interface{}) string { b, _ := json.Marshal(v); return string(b) }
	funcs["lookup"] = func(...interface{}) map[string]interface{} { return map[string]interface{}{} }
	root.Funcs(funcs).Option("missingkey=zero")

	tdir := filepath.Join(chartDir, "templates")
	entries, err := os.ReadDir(tdir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".tpl")) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(tdir, n))
		if err != nil {
			return err
		}
		if _, err := root.New(n).Parse(string(data)); err != nil {
			return err
		}
		if !strings.HasPrefix(n, "_") && !strings.HasSuffix(n, ".tpl") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out strings.Builder
	for _, n := range names {
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, n, top); err != nil {
			return err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s/templates/%s\n%s\n", str("name"), n, strings.TrimSpace(text))
	}
	_, err = os.Stdout.WriteString(out.String())
	return err
}
