package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// applyFile sets every flag not given on the command line from the YAML config
// file at path. The file is one mapping of flag names to scalar values, read as
// the same text a flag would take (maxmemory: 1gb, protected-mode: "no").
func applyFile(fs *flag.FlagSet, given map[string]bool, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 { // an empty file
		return nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s: line %d: want a mapping of option names to values", path, m.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if err := applyFileOption(fs, given, seen, m.Content[i], m.Content[i+1]); err != nil {
			return fmt.Errorf("config file %s: line %d: %w", path, m.Content[i].Line, err)
		}
	}
	return nil
}

func applyFileOption(fs *flag.FlagSet, given, seen map[string]bool, k, v *yaml.Node) error {
	name := k.Value
	f := fs.Lookup(name)
	switch {
	case k.Kind != yaml.ScalarNode || f == nil:
		return fmt.Errorf("unknown option %q", name)
	case name == "config":
		return errors.New("config cannot name another config file")
	case seen[name]:
		return fmt.Errorf("%s is set twice", name)
	case v.Kind == yaml.SequenceNode && isList(f):
		return applyFileList(f, given[name], v)
	case v.Kind != yaml.ScalarNode:
		return fmt.Errorf("%s: want a single value", name)
	}
	seen[name] = true
	if given[name] || v.Tag == "!!null" {
		return nil
	}
	if err := f.Value.Set(v.Value); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// isList reports whether f takes a list in the config file (rename-command).
func isList(f *flag.Flag) bool {
	_, ok := f.Value.(*renames)
	return ok
}

// applyFileList sets a list flag from a YAML sequence of scalars.
func applyFileList(f *flag.Flag, given bool, v *yaml.Node) error {
	for _, item := range v.Content {
		if item.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: want a list of values", f.Name)
		}
		if given {
			continue
		}
		if err := f.Value.Set(item.Value); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return nil
}
