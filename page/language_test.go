package page

import (
	"strings"
	"testing"

	"golang.org/x/text/language"
)

func TestLanguage_FromRealisticHeaders(t *testing.T) {
	tests := []struct {
		header string
		want   language.Tag
	}{
		{"fr-CH, fr;q=0.9, en;q=0.8", language.French},
		{"fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7", language.French},
		{"en-US,en;q=0.9", language.English},
		{"en-GB", language.English},
		{"de-DE,de;q=0.9,en;q=0.8", language.German},
		{"de-CH", language.German},
		{"es-419,es;q=0.9", language.Spanish},
		{"es-ES", language.Spanish},
		{"it-IT,it;q=0.9,en-US;q=0.8", language.Italian},
		{"pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7", language.Portuguese},
		{"pt-PT", language.Portuguese},
		{"nl-NL,nl;q=0.9,en;q=0.8", language.Dutch},
		{"nl-BE", language.Dutch},
		{"pl-PL,pl;q=0.9,en-US;q=0.8", language.Polish},
		{"ja,en-US;q=0.9,en;q=0.8", language.Japanese},
		{"ja-JP", language.Japanese},
		{"zh-CN", language.SimplifiedChinese},
		{"zh-CN,zh;q=0.9,en;q=0.8", language.SimplifiedChinese},
		{"zh-Hans", language.SimplifiedChinese},
		{"ar", language.Arabic},
		{"ar-EG,ar;q=0.9,en;q=0.8", language.Arabic},
		{"he-IL,he;q=0.9,en-US;q=0.8", language.Hebrew},
		{"iw", language.Hebrew}, // the old code of Hebrew, still sent by some systems
		{"sv-SE,sv;q=0.9,fr;q=0.5", language.Swedish},
		{"en;q=0.1, de;q=0.9", language.German},
		{"ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7", language.Russian},
		{"uk-UA,uk;q=0.9,ru;q=0.8", language.Ukrainian},
		{"tr-TR,tr;q=0.9", language.Turkish},
		{"da-DK,da;q=0.9,en;q=0.8", language.Danish},
		{"nb-NO,nb;q=0.9,no;q=0.8", language.MustParse("nb")},
		{"no", language.MustParse("nb")},
		{"fi-FI", language.Finnish},
		{"el-GR,el;q=0.9", language.Greek},
		{"cs-CZ,cs;q=0.9,en;q=0.8", language.Czech},
		{"ro-RO", language.Romanian},
		{"hu-HU,hu;q=0.9", language.Hungarian},
		{"hi-IN,hi;q=0.9,en-IN;q=0.8", language.Hindi},
		{"bn-BD", language.Bengali},
		{"ko-KR,ko;q=0.9,en-US;q=0.8", language.Korean},
		{"zh-TW,zh;q=0.9,en-US;q=0.8", language.TraditionalChinese},
		{"zh-HK", language.TraditionalChinese},
		{"zh-Hant", language.TraditionalChinese},
		{"zh-SG", language.SimplifiedChinese},
		{"vi-VN,vi;q=0.9", language.Vietnamese},
		{"th-TH,th;q=0.9", language.Thai},
		{"id-ID,id;q=0.9,en;q=0.8", language.Indonesian},
		{"in", language.Indonesian}, // the old code of Indonesian
		{"fa-IR,fa;q=0.9,en;q=0.8", language.Persian},
		{"ur-PK", language.Urdu},
		{"ur-IN,hi;q=0.5", language.Urdu},
		// Fallbacks to English.
		{"", language.English},
		{"*", language.English},
		{"garbage", language.English},
		{"!!!;;;,,,q=", language.English},
		{"xx-YY", language.English},
		{"sw-KE", language.English}, // Swahili: not (yet) spoken by the pages
		{strings.Repeat("en-US,", 2000) + "fr", language.English},
	}
	for _, tt := range tests {
		name := tt.header
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		t.Run(name, func(t *testing.T) {
			if got := Language(tt.header); got != tt.want {
				t.Errorf("Language(%q) = %v, want %v", name, got, tt.want)
			}
		})
	}
}

func TestLanguage_LongHeaderKeepsItsHead(t *testing.T) {
	header := "de-DE," + strings.Repeat("x-abcdefgh;q=0.1,", 200)
	if got := Language(header); got != language.German {
		t.Errorf("Language(long header starting with de) = %v, want de", got)
	}
}

func TestLocaleFor_Direction(t *testing.T) {
	rtl := map[language.Tag]bool{language.Arabic: true, language.Hebrew: true, language.Persian: true, language.Urdu: true}
	for _, l := range Locales() {
		want := "ltr"
		if rtl[l.Tag] {
			want = "rtl"
		}
		if got := LocaleFor(l.Tag.String()).Dir; got != want {
			t.Errorf("%v: dir %q, want %q", l.Tag, got, want)
		}
	}
	for _, h := range []string{"ar", "ar-SA", "he", "he-IL", "fa", "fa-IR", "ur", "ur-PK"} {
		if got := LocaleFor(h).Dir; got != "rtl" {
			t.Errorf("LocaleFor(%q).Dir = %q, want rtl", h, got)
		}
	}
}

func TestLocales_IsACopy(t *testing.T) {
	ls := Locales()
	ls[0].Messages.Title = "changed"
	if locales[0].Messages.Title == "changed" {
		t.Error("Locales exposes the table")
	}
}
