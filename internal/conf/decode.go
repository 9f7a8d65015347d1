package conf

import (
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Unmarshaler is implemented by types that decode themselves from a YAML node. They
// report problems to errs at path (or below it) instead of returning an error, so
// that every problem of a file is found in one pass.
type Unmarshaler interface {
	UnmarshalConf(d *Decoder, n *yaml.Node, path string, errs *Errors)
}

// Validator is implemented by configuration structs that check themselves once
// decoded: required fields, ranges, fields that depend on each other. The decoder
// calls Validate on every struct it decoded from a mapping, innermost first.
type Validator interface {
	Validate(path string, errs *Errors)
}

// Limits on what one document may make the decoder do, so that a hostile file (alias
// bombs, deep nesting) costs little.
const (
	maxNodes = 1 << 20
	maxDepth = 64
)

// Decoder decodes YAML nodes into Go values. The zero value reads the process
// environment for ${VAR} references.
type Decoder struct {
	// Env looks up environment variables; nil means os.LookupEnv.
	Env func(name string) (string, bool)

	nodes int
	depth int
}

// Parse parses one YAML document. An empty document gives a nil node and no error.
func Parse(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("not valid YAML: %s", yamlError(err, data))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("the file holds more than one YAML document")
	}
	return &doc, nil
}

// Decode decodes n into out, which must be a non-nil pointer, reporting every problem
// to errs with paths below path. Fields absent from n keep the values out already
// holds, so callers set defaults before decoding.
func (d *Decoder) Decode(n *yaml.Node, out any, path string, errs *Errors) {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("conf: Decode needs a non-nil pointer")
	}
	d.decode(n, v.Elem(), path, errs)
}

var (
	nodeType        = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
	validatorType   = reflect.TypeFor[Validator]()
)

// decode decodes n into v, reporting every problem to errs at path or below it. An
// empty value keeps what v holds; a type that decodes itself does so, any other value
// is decoded by its kind.
func (d *Decoder) decode(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	if n == nil || !d.countNode(path, errs) {
		return
	}
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDepth {
		errs.Add(path, "nested too deeply")
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			d.decode(n.Content[0], v, path, errs)
		}
		return
	case yaml.AliasNode:
		d.decode(n.Alias, v, path, errs)
		return
	}
	if isNull(n) {
		return // an empty value keeps the default
	}
	if d.decodeCustom(n, v, path, errs) {
		return
	}
	d.decodeKind(n, v, path, errs)
}

// countNode counts one more node against maxNodes, aliases expanded, and reports
// whether it may still be decoded. The document is said to be too large once only,
// at the first node over the limit, so that an alias bomb gives one error, not millions.
func (d *Decoder) countNode(path string, errs *Errors) bool {
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			errs.Add(path, "the document is too large (too many nodes once aliases are expanded)")
		}
		return false
	}
	return true
}

// decodeCustom decodes n into v when v's type says how to, and reports whether it did:
// an Unmarshaler decodes itself, a yaml.Node keeps n as it is (for a later decode),
// and an encoding.TextUnmarshaler parses the scalar's text. The order matters: a type
// that is both an Unmarshaler and a TextUnmarshaler decodes itself.
func (d *Decoder) decodeCustom(n *yaml.Node, v reflect.Value, path string, errs *Errors) bool {
	if !v.CanAddr() {
		return false
	}
	switch {
	case v.Addr().Type().Implements(unmarshalerType):
		v.Addr().Interface().(Unmarshaler).UnmarshalConf(d, n, path, errs)
	case v.Type() == nodeType:
		v.Set(reflect.ValueOf(*n))
	case v.Addr().Type().Implements(textType):
		s, ok := d.scalar(n, path, errs, "a string")
		if !ok {
			return true
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			errs.Add(path, "%s", err.Error())
		}
	default:
		return false
	}
	return true
}

// decodeKind decodes n into v by v's kind. Any other kind (an array, a channel, a
// function) is a mistake in the configuration type, not in the file, so it panics.
func (d *Decoder) decodeKind(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path, errs)
	case reflect.Struct:
		d.decodeStruct(n, v, path, errs)
	case reflect.Slice:
		d.decodeSlice(n, v, path, errs)
	case reflect.Map:
		d.decodeMap(n, v, path, errs)
	case reflect.String:
		s, ok := d.scalar(n, path, errs, "a string")
		if ok {
			v.SetString(s)
		}
	case reflect.Bool:
		d.decodeBool(n, v, path, errs)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d.decodeInt(n, v, path, errs)
	case reflect.Float32, reflect.Float64:
		d.decodeFloat(n, v, path, errs)
	case reflect.Interface:
		d.decodeAny(n, v, path, errs)
	default:
		panic(fmt.Sprintf("conf: cannot decode into %s at %s", v.Type(), path))
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// kindName says what a node is, for "must be X, got Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return "a string"
}

// scalar returns n's value with ${VAR} references expanded; want names the expected
// kind for the error when n is not a scalar.
func (d *Decoder) scalar(n *yaml.Node, path string, errs *Errors, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		errs.Add(path, "must be %s, got %s", want, kindName(n))
		return "", false
	}
	s, err := d.expand(n.Value)
	if err != nil {
		errs.Add(path, "%s", err.Error())
		return "", false
	}
	return s, true
}

func (d *Decoder) decodeBool(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	s, ok := d.scalar(n, path, errs, "true or false")
	if !ok {
		return
	}
	switch s {
	case "true", "True", "TRUE":
		v.SetBool(true)
	case "false", "False", "FALSE":
		v.SetBool(false)
	default:
		errs.Add(path, "must be true or false, got %s", strconv.Quote(s))
	}
}

func (d *Decoder) decodeInt(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	s, ok := d.scalar(n, path, errs, "a whole number")
	if !ok {
		return
	}
	if v.CanInt() {
		i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil || v.OverflowInt(i) {
			errs.Add(path, "%s is not a whole number in range", strconv.Quote(s))
			return
		}
		v.SetInt(i)
		return
	}
	u, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil || v.OverflowUint(u) {
		errs.Add(path, "%s is not a whole number in range (0 or more)", strconv.Quote(s))
		return
	}
	v.SetUint(u)
}

// decodeFloat decodes a number, refusing NaN and the infinities.
func (d *Decoder) decodeFloat(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	s, ok := d.scalar(n, path, errs, "a number")
	if !ok {
		return
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		errs.Add(path, "%s is not a number", strconv.Quote(s))
		return
	}
	v.SetFloat(f)
}

// decodeAny decodes n into an interface value with the YAML library's own rules
// (maps, lists, strings, numbers): ${VAR} references are not expanded there.
func (d *Decoder) decodeAny(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	var x any
	if err := n.Decode(&x); err != nil {
		errs.Add(path, "%s", err.Error())
		return
	}
	if x != nil {
		v.Set(reflect.ValueOf(x))
	}
}

func (d *Decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	if n.Kind != yaml.SequenceNode {
		errs.Add(path, "must be a list, got %s", kindName(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(item, out.Index(i), Index(path, i), errs)
	}
	v.Set(out)
}

func (d *Decoder) decodeMap(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	if n.Kind != yaml.MappingNode {
		errs.Add(path, "must be a mapping, got %s", kindName(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		panic("conf: only maps with string keys are supported")
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]bool{}
	d.eachPair(n, path, errs, func(key string, value *yaml.Node) {
		if seen[key] {
			errs.Add(Key(path, key), "defined twice")
			return
		}
		seen[key] = true
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(value, elem, Key(path, key), errs)
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
	})
}

// eachPair calls f for each key of mapping n, merge keys (<<) first so that explicit
// keys override merged ones.
func (d *Decoder) eachPair(n *yaml.Node, path string, errs *Errors, f func(key string, value *yaml.Node)) {
	explicit := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag != "!!merge" {
			explicit[k.Value] = true
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, value := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			d.merge(value, path, errs, explicit, f)
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, value := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			errs.Add(path, "keys must be plain strings, got %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			continue
		}
		f(k.Value, value)
	}
}

func (d *Decoder) merge(value *yaml.Node, path string, errs *Errors, explicit map[string]bool, f func(string, *yaml.Node)) {
	for value.Kind == yaml.AliasNode {
		value = value.Alias
	}
	switch value.Kind {
	case yaml.MappingNode:
		d.nodes += len(value.Content)
		if d.nodes > maxNodes {
			return
		}
		d.eachPair(value, path, errs, func(key string, v *yaml.Node) {
			if !explicit[key] {
				explicit[key] = true // the first merged mapping wins, as YAML says
				f(key, v)
			}
		})
	case yaml.SequenceNode:
		for _, item := range value.Content {
			d.merge(item, path, errs, explicit, f)
		}
	default:
		errs.Add(path, "a merge (<<) must name a mapping, got %s", kindName(value))
	}
}

// field is one decodable field of a struct.
type field struct {
	name  string
	index []int
}

// structFields lists the fields of t by YAML name. An embedded struct without a
// yaml name is inlined, as encoding/json does, so a plugin can embed its config.
func structFields(t reflect.Type) []field {
	var fields []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			for _, f := range structFields(sf.Type) {
				fields = append(fields, field{name: f.name, index: append([]int{i}, f.index...)})
			}
			continue
		}
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		fields = append(fields, field{name: name, index: sf.Index})
	}
	return fields
}

func (d *Decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, errs *Errors) {
	if n.Kind != yaml.MappingNode {
		errs.Add(path, "must be a mapping, got %s", kindName(n))
		return
	}
	fields := structFields(v.Type())
	byName := make(map[string]field, len(fields))
	for _, f := range fields {
		byName[f.name] = f
	}
	seen := map[string]bool{}
	d.eachPair(n, path, errs, func(key string, value *yaml.Node) {
		f, ok := byName[key]
		if !ok {
			errs.Add(Key(path, key), "%s", unknownKey(key, fields))
			return
		}
		if seen[key] {
			errs.Add(Key(path, key), "defined twice")
			return
		}
		seen[key] = true
		d.decode(value, v.FieldByIndex(f.index), Key(path, key), errs)
	})
	if v.CanAddr() && v.Addr().Type().Implements(validatorType) {
		v.Addr().Interface().(Validator).Validate(path, errs)
	}
}

func unknownKey(key string, fields []field) string {
	// Short keys are close to too many others to guess well.
	best, bestDist := "", 2
	if len(key) > 4 {
		bestDist = 3
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	best = Closest(key, names, bestDist-1)
	if best != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", best)
	}
	sort.Strings(names)
	return "unknown key (expected one of: " + strings.Join(names, ", ") + ")"
}

func (d *Decoder) lookup(name string) (string, bool) {
	if d.Env != nil {
		return d.Env(name)
	}
	return os.LookupEnv(name)
}
