// helm-render renders a Helm chart the way `helm template` does, for CI machines that cannot
// download Helm (it is not packaged in Debian). It uses the same engine Helm uses: Go's
// text/template with the Sprig function library (Debian: golang-github-masterminds-sprig-dev),
// plus Helm's own additions (include, tpl, required, toYaml, fromYaml, toJson, lookup).
//
// Like Helm 3, it validates the merged values against the chart's values.schema.json (with the
// JSON-schema library Helm 3 used, xeipuuv/gojsonschema; Debian: golang-github-xeipuuv-gojsonschema-dev)
// before rendering, and reports a failure in Helm's words. NOTES.txt is rendered only with --notes
// (then it is all that is printed), as `helm install` shows it; `helm template` leaves it out.
// .Capabilities.APIVersions.Has answers from --api-versions (Helm's `helm template --api-versions`).
//
// Limitations compared with real Helm, stated so nobody trusts more than is there: no
// subcharts, no .Files, no hooks, `lookup` always returns an empty map, and --set is not
// supported (use values files).
//
// Usage: helm-render [-f values.yaml]... [--name NAME] [--namespace NS] [--api-versions GROUP/VERSION]...
//                    [--notes] CHART_DIR
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
	"github.com/xeipuuv/gojsonschema"
	"gopkg.in/yaml.v3"
)

// apiVersions is .Capabilities.APIVersions: Has("group/version") or Has("group/version/Kind").
type apiVersions []string

func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v || strings.HasPrefix(x, v+"/") {
			return true
		}
	}
	return false
}

// validateSchema checks values against CHART_DIR/values.schema.json when it exists, as Helm 3 does
// before rendering, and words a failure as Helm does.
func validateSchema(chartDir, chartName string, values map[string]interface{}) error {
	schema, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Through JSON, so that the YAML decoder's types are plain JSON types.
	doc, err := json.Marshal(values)
	if err != nil {
		return err
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	if result.Valid() {
		return nil
	}
	var b strings.Builder
	b.WriteString("values don't meet the specifications of the schema(s) in the following chart(s):\n" + chartName + ":\n")
	for _, e := range result.Errors() {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	return errors.New(strings.TrimSuffix(b.String(), "\n"))
}

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
	var apis valueFiles
	flag.Var(&apis, "api-versions", "an API version the cluster serves (repeatable), for .Capabilities.APIVersions.Has")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt (what `helm install` shows) instead of the manifests")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: helm-render [-f values.yaml]... [--name N] [--namespace NS] CHART_DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), files, *name, *namespace, *kubeVersion, apiVersions(apis), *notes); err != nil {
		fmt.Fprintln(os.Stderr, "helm-render:", err)
		os.Exit(1)
	}
}

func run(chartDir string, files []string, name, namespace, kubeVersion string, apis apiVersions, notes bool) error {
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
	chartName, _ := chart["name"].(string)
	if err := validateSchema(chartDir, chartName, values); err != nil {
		return err
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
			"APIVersions": apis,
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
		if e.IsDir() || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".tpl") || n == "NOTES.txt") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(tdir, n))
		if err != nil {
			return err
		}
		if _, err := root.New(n).Parse(string(data)); err != nil {
			return err
		}
		if !strings.HasPrefix(n, "_") && !strings.HasSuffix(n, ".tpl") && n != "NOTES.txt" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	// Like Helm, every manifest is rendered (a template's `fail` stops the release) before NOTES.
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
	if notes {
		if root.Lookup("NOTES.txt") == nil {
			return errors.New("the chart has no templates/NOTES.txt")
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, "NOTES.txt", top); err != nil {
			return err
		}
		_, err = os.Stdout.WriteString(strings.ReplaceAll(buf.String(), "<no value>", ""))
		return err
	}
	_, err = os.Stdout.WriteString(out.String())
	return err
}
