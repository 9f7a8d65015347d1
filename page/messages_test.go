package page

import (
	"reflect"
	"strings"
	"testing"

	"golang.org/x/text/language"
)

func TestMessages_EveryLanguageHasEveryMessage(t *testing.T) {
	want := []language.Tag{
		language.English, language.French, language.German, language.Spanish, language.Italian,
		language.Portuguese, language.Dutch, language.Polish, language.Japanese, language.SimplifiedChinese,
		language.Arabic, language.Hebrew,
		// Added with issue 25: seed WOC's 32.
		language.Russian, language.Ukrainian, language.Turkish, language.Swedish, language.Danish,
		language.MustParse("nb"), language.Finnish, language.Greek, language.Czech, language.Romanian,
		language.Hungarian, language.Hindi, language.Bengali, language.Korean, language.TraditionalChinese,
		language.Vietnamese, language.Thai, language.Indonesian, language.Persian, language.Urdu,
	}
	if len(locales) != 32 || len(want) != 32 {
		t.Errorf("the pages speak %d languages (the test lists %d), want 32", len(locales), len(want))
	}
	seen := map[language.Tag]bool{}
	for _, l := range locales {
		if seen[l.Tag] {
			t.Errorf("%v appears twice in the table", l.Tag)
		}
		seen[l.Tag] = true
	}
	for _, tag := range want {
		if !seen[tag] {
			t.Errorf("language %v is missing", tag)
		}
	}
	if locales[0].Tag != language.English {
		t.Errorf("first language (the fallback) is %v, want English", locales[0].Tag)
	}

	placeholders := map[string]string{"Title": PlaceholderApp, "ErrorTitle": PlaceholderApp, "Elapsed": PlaceholderSeconds,
		"ETA": PlaceholderSeconds, "ETALate": PlaceholderSeconds, "Seconds": PlaceholderSeconds,
		"LimitedTitle": PlaceholderApp, "Limited": PlaceholderSeconds}
	typ := reflect.TypeOf(Messages{})
	for _, l := range locales {
		if l.Dir != "ltr" && l.Dir != "rtl" {
			t.Errorf("%v: dir %q", l.Tag, l.Dir)
		}
		v := reflect.ValueOf(l.Messages)
		for i := range typ.NumField() {
			name, msg := typ.Field(i).Name, v.Field(i).String()
			if strings.TrimSpace(msg) == "" {
				t.Errorf("%v: message %s is empty", l.Tag, name)
				continue
			}
			if ph, ok := placeholders[name]; ok {
				if n := strings.Count(msg, ph); n != 1 {
					t.Errorf("%v: %s holds %s %d times, want once: %q", l.Tag, name, ph, n, msg)
				}
			}
			rest := msg
			if ph, ok := placeholders[name]; ok {
				rest = strings.Replace(rest, ph, "", 1)
			}
			if strings.ContainsAny(rest, "{}<>") {
				t.Errorf("%v: %s holds a stray placeholder or markup: %q", l.Tag, name, msg)
			}
		}
	}
}

func TestMessages_TranslatedNotCopied(t *testing.T) {
	en := locales[0].Messages
	for _, l := range locales[1:] {
		// Short labels may coincide (Node in Dutch); sentences may not.
		for _, pair := range [][2]string{{l.Messages.Lead, en.Lead}, {l.Messages.Waking, en.Waking}, {l.Messages.Error, en.Error},
			{l.Messages.ETA, en.ETA}, {l.Messages.ETALate, en.ETALate}, {l.Messages.PhaseUp, en.PhaseUp},
			{l.Messages.Limited, en.Limited}, {l.Messages.LimitedTitle, en.LimitedTitle}} {
			if pair[0] == pair[1] {
				t.Errorf("%v: %q is the English text", l.Tag, pair[0])
			}
		}
	}
}

func TestFillAndAround(t *testing.T) {
	if got := fill("{app} is up", PlaceholderApp, "x{app}"); got != "x{app} is up" {
		t.Errorf("fill = %q", got)
	}
	if b, a := around("wait {n} s", PlaceholderSeconds); b != "wait " || a != " s" {
		t.Errorf("around = %q, %q", b, a)
	}
	if b, a := around("no placeholder", PlaceholderSeconds); b != "no placeholder" || a != "" {
		t.Errorf("around without placeholder = %q, %q", b, a)
	}
}
