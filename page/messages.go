package page

import (
	"slices"
	"strings"

	"golang.org/x/text/language"
)

// Placeholders in messages. The value replacing them is escaped like any other text.
const (
	PlaceholderApp     = "{app}" // the name in the heading: the route's (Waiting.DisplayName)
	PlaceholderSeconds = "{n}"   // the seconds waited so far, updated by the page script
)

// Messages are the texts of the pages in one language. Every field is required (a test checks it).
type Messages struct {
	Title        string // heading and <title> while waiting; holds PlaceholderApp
	ErrorTitle   string // heading once the app could not be started; holds PlaceholderApp
	DefaultApp   string // the name shown when the app has none, capitalised for the start of a heading
	Lead         string // why the app sleeps and what the page does
	GoingToSleep string // status WaitingForShutdown
	Waking       string // statuses Down and WaitingForUp, while the app's usual boot time is not known
	WakingETA    string // the same once it is known: no guess of how long, the ETA line below says it
	Almost       string // the gateway lets polls through, the app does not answer yet
	Error        string // status Error
	Elapsed      string // seconds waited; holds PlaceholderSeconds
	RequestID    string // footer label
	Node         string // footer label
	NoScript     string // shown when JavaScript is off (the page then reloads with a meta refresh)

	ETA     string // the app's usual boot time; holds PlaceholderSeconds
	ETALate string // the wake runs longer than usual; holds PlaceholderSeconds (the usual time)
	// Progress names the list of the wake's phases for assistive technologies.
	Progress string
	// The phases of a wake: asked, the start accepted by the platform, the app up (reaper checks
	// that it answers), ready.
	PhaseAsked, PhaseAccepted, PhaseUp, PhaseReady string
	Seconds                                        string // a phase's time; holds PlaceholderSeconds
	// LimitedTitle is the heading once a wake limit refused to wake the app for the visitor (holds
	// PlaceholderApp); Limited says why and when the page tries again (holds PlaceholderSeconds).
	LimitedTitle, Limited string
}

// locales is the message table, one entry per language, English first: it is the fallback. The headings put
// PlaceholderApp where the grammar of the language takes a bare name, so the name is never declined. The
// first twelve are below; the others in messages_europe.go, messages_asia.go and messages_rtl.go.
var locales = slices.Concat(firstLocales, europeLocales, asiaLocales, rtlLocales)

// firstLocales are the languages the pages spoke first: English (the fallback), the main languages of
// Western Europe, Polish, Japanese, Simplified Chinese, Arabic and Hebrew.
var firstLocales = []Locale{
	{Tag: language.English, Dir: "ltr", Messages: Messages{
		Title:         "{app} is waking up",
		ErrorTitle:    "{app} could not be started",
		DefaultApp:    "The application",
		Lead:          "The application was put to sleep because nobody was using it. This page opens it as soon as it is ready.",
		GoingToSleep:  "Going to sleep, will wake up right after.",
		Waking:        "Waking up. This can take a minute or two.",
		WakingETA:     "Waking up.",
		Almost:        "Almost ready: the application is starting.",
		Error:         "The application could not be started. This page keeps checking and opens it once it answers.",
		Elapsed:       "Waiting for {n} s",
		RequestID:     "Request ID",
		Node:          "Node",
		NoScript:      "JavaScript is turned off: this page reloads itself every few seconds instead.",
		ETA:           "Usually ready in about {n} s",
		ETALate:       "Taking longer than usual (usually about {n} s)",
		Progress:      "Progress",
		PhaseAsked:    "Wake-up requested",
		PhaseAccepted: "Starting",
		PhaseUp:       "Started, waiting for it to answer",
		PhaseReady:    "Ready",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} is still asleep",
		Limited:       "Too many wake-ups were asked from your address. This page tries again in {n} s.",
	}},
	{Tag: language.French, Dir: "ltr", Messages: Messages{
		Title:         "{app} se réveille",
		ErrorTitle:    "{app} n’a pas pu démarrer",
		DefaultApp:    "L’application",
		Lead:          "L’application a été mise en veille faute d’utilisation. Cette page l’ouvrira dès qu’elle sera prête.",
		GoingToSleep:  "Mise en veille en cours, elle se réveillera juste après.",
		Waking:        "Réveil en cours. Cela peut prendre une minute ou deux.",
		WakingETA:     "Réveil en cours.",
		Almost:        "Presque prête : l’application démarre.",
		Error:         "L’application n’a pas pu démarrer. Cette page continue de vérifier et l’ouvrira dès qu’elle répondra.",
		Elapsed:       "En attente depuis {n} s",
		RequestID:     "Identifiant de requête",
		Node:          "Nœud",
		NoScript:      "JavaScript est désactivé : cette page se recharge d’elle-même à intervalles réguliers.",
		ETA:           "Prête d’habitude en {n} s environ",
		ETALate:       "Plus long que d’habitude (d’habitude {n} s environ)",
		Progress:      "Progression",
		PhaseAsked:    "Réveil demandé",
		PhaseAccepted: "Démarrage",
		PhaseUp:       "Démarrée, en attente de sa réponse",
		PhaseReady:    "Prête",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} est encore en veille",
		Limited:       "Trop de réveils ont été demandés depuis votre adresse. Cette page réessaie dans {n} s.",
	}},
	{Tag: language.German, Dir: "ltr", Messages: Messages{
		Title:         "{app} wacht auf",
		ErrorTitle:    "{app} konnte nicht gestartet werden",
		DefaultApp:    "Die Anwendung",
		Lead:          "Die Anwendung wurde schlafen gelegt, weil sie niemand genutzt hat. Diese Seite öffnet sie, sobald sie bereit ist.",
		GoingToSleep:  "Wird gerade schlafen gelegt und gleich danach wieder geweckt.",
		Waking:        "Wird geweckt. Das kann ein bis zwei Minuten dauern.",
		WakingETA:     "Wird geweckt.",
		Almost:        "Fast bereit: Die Anwendung startet.",
		Error:         "Die Anwendung konnte nicht gestartet werden. Diese Seite prüft weiter und öffnet sie, sobald sie antwortet.",
		Elapsed:       "Wartezeit: {n} s",
		RequestID:     "Anfrage-ID",
		Node:          "Knoten",
		NoScript:      "JavaScript ist deaktiviert: Diese Seite lädt sich stattdessen alle paar Sekunden neu.",
		ETA:           "Normalerweise in etwa {n} s bereit",
		ETALate:       "Dauert länger als üblich (sonst etwa {n} s)",
		Progress:      "Fortschritt",
		PhaseAsked:    "Aufwecken angefordert",
		PhaseAccepted: "Startet",
		PhaseUp:       "Gestartet, wartet auf Antwort",
		PhaseReady:    "Bereit",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} schläft noch",
		Limited:       "Von Ihrer Adresse wurden zu viele Weckvorgänge angefordert. Diese Seite versucht es in {n} s erneut.",
	}},
	{Tag: language.Spanish, Dir: "ltr", Messages: Messages{
		Title:         "{app} se está despertando",
		ErrorTitle:    "{app} no se pudo iniciar",
		DefaultApp:    "La aplicación",
		Lead:          "La aplicación se puso en reposo porque nadie la usaba. Esta página la abrirá en cuanto esté lista.",
		GoingToSleep:  "Entrando en reposo; se despertará justo después.",
		Waking:        "Despertando. Puede tardar uno o dos minutos.",
		WakingETA:     "Despertando.",
		Almost:        "Casi lista: la aplicación se está iniciando.",
		Error:         "No se pudo iniciar la aplicación. Esta página sigue comprobando y la abrirá en cuanto responda.",
		Elapsed:       "Esperando desde hace {n} s",
		RequestID:     "ID de solicitud",
		Node:          "Nodo",
		NoScript:      "JavaScript está desactivado: esta página se recarga sola cada pocos segundos.",
		ETA:           "Suele estar lista en unos {n} s",
		ETALate:       "Tarda más de lo habitual (suele tardar unos {n} s)",
		Progress:      "Progreso",
		PhaseAsked:    "Activación solicitada",
		PhaseAccepted: "Iniciando",
		PhaseUp:       "Iniciada, esperando su respuesta",
		PhaseReady:    "Lista",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} sigue en reposo",
		Limited:       "Se han solicitado demasiados despertares desde su dirección. Esta página lo reintentará en {n} s.",
	}},
	{Tag: language.Italian, Dir: "ltr", Messages: Messages{
		Title:         "{app} si sta risvegliando",
		ErrorTitle:    "{app}: avvio non riuscito",
		DefaultApp:    "L’applicazione",
		Lead:          "L’applicazione è stata sospesa perché nessuno la usava. Questa pagina la aprirà appena sarà pronta.",
		GoingToSleep:  "Sospensione in corso; si risveglierà subito dopo.",
		Waking:        "Risveglio in corso. Può richiedere un paio di minuti.",
		WakingETA:     "Risveglio in corso.",
		Almost:        "Quasi pronta: l’applicazione si sta avviando.",
		Error:         "Impossibile avviare l’applicazione. Questa pagina continua a controllare e la aprirà appena risponderà.",
		Elapsed:       "In attesa da {n} s",
		RequestID:     "ID richiesta",
		Node:          "Nodo",
		NoScript:      "JavaScript è disattivato: questa pagina si ricarica da sola ogni pochi secondi.",
		ETA:           "Di solito pronta in circa {n} s",
		ETALate:       "Ci vuole più del solito (di solito circa {n} s)",
		Progress:      "Avanzamento",
		PhaseAsked:    "Risveglio richiesto",
		PhaseAccepted: "Avvio in corso",
		PhaseUp:       "Avviata, in attesa di risposta",
		PhaseReady:    "Pronta",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} è ancora in sospensione",
		Limited:       "Troppi risvegli richiesti dal tuo indirizzo. Questa pagina riproverà tra {n} s.",
	}},
	{Tag: language.Portuguese, Dir: "ltr", Messages: Messages{
		Title:         "{app} está acordando",
		ErrorTitle:    "{app}: não foi possível iniciar",
		DefaultApp:    "A aplicação",
		Lead:          "A aplicação foi colocada em repouso porque ninguém a usava. Esta página vai abri-la assim que estiver pronta.",
		GoingToSleep:  "Entrando em repouso; vai acordar logo em seguida.",
		Waking:        "Acordando. Isso pode levar um ou dois minutos.",
		WakingETA:     "Acordando.",
		Almost:        "Quase pronta: a aplicação está iniciando.",
		Error:         "Não foi possível iniciar a aplicação. Esta página continua verificando e vai abri-la assim que responder.",
		Elapsed:       "Aguardando há {n} s",
		RequestID:     "ID da requisição",
		Node:          "Nó",
		NoScript:      "O JavaScript está desativado: esta página se recarrega sozinha a cada poucos segundos.",
		ETA:           "Normalmente pronta em cerca de {n} s",
		ETALate:       "Está demorando mais que o normal (normalmente cerca de {n} s)",
		Progress:      "Progresso",
		PhaseAsked:    "Ativação solicitada",
		PhaseAccepted: "Iniciando",
		PhaseUp:       "Iniciada, aguardando resposta",
		PhaseReady:    "Pronta",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} ainda está em repouso",
		Limited:       "Foram solicitados despertares demais a partir do seu endereço. Esta página tentará de novo em {n} s.",
	}},
	{Tag: language.Dutch, Dir: "ltr", Messages: Messages{
		Title:         "{app} wordt gewekt",
		ErrorTitle:    "{app} kon niet worden gestart",
		DefaultApp:    "De applicatie",
		Lead:          "De applicatie is in slaap gebracht omdat niemand haar gebruikte. Deze pagina opent haar zodra ze klaar is.",
		GoingToSleep:  "Gaat nu slapen en wordt direct daarna weer gewekt.",
		Waking:        "Wordt gewekt. Dit kan een à twee minuten duren.",
		WakingETA:     "Wordt gewekt.",
		Almost:        "Bijna klaar: de applicatie start op.",
		Error:         "De applicatie kon niet worden gestart. Deze pagina blijft controleren en opent haar zodra ze antwoordt.",
		Elapsed:       "Wacht al {n} s",
		RequestID:     "Verzoek-ID",
		Node:          "Node",
		NoScript:      "JavaScript staat uit: deze pagina herlaadt zichzelf om de paar seconden.",
		ETA:           "Meestal klaar in ongeveer {n} s",
		ETALate:       "Duurt langer dan normaal (meestal ongeveer {n} s)",
		Progress:      "Voortgang",
		PhaseAsked:    "Wekken aangevraagd",
		PhaseAccepted: "Wordt gestart",
		PhaseUp:       "Gestart, wacht op antwoord",
		PhaseReady:    "Klaar",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} slaapt nog",
		Limited:       "Er zijn te veel wekverzoeken gedaan vanaf uw adres. Deze pagina probeert het over {n} s opnieuw.",
	}},
	{Tag: language.Polish, Dir: "ltr", Messages: Messages{
		Title:         "{app} – trwa wybudzanie",
		ErrorTitle:    "{app} – nie udało się uruchomić",
		DefaultApp:    "Aplikacja",
		Lead:          "Aplikacja została uśpiona, bo nikt z niej nie korzystał. Ta strona otworzy ją, gdy tylko będzie gotowa.",
		GoingToSleep:  "Trwa usypianie; zaraz potem nastąpi wybudzenie.",
		Waking:        "Trwa wybudzanie. Może to potrwać minutę lub dwie.",
		WakingETA:     "Trwa wybudzanie.",
		Almost:        "Prawie gotowe: aplikacja się uruchamia.",
		Error:         "Nie udało się uruchomić aplikacji. Ta strona nadal sprawdza i otworzy ją, gdy tylko zacznie odpowiadać.",
		Elapsed:       "Czekanie: {n} s",
		RequestID:     "ID żądania",
		Node:          "Węzeł",
		NoScript:      "JavaScript jest wyłączony: ta strona odświeża się sama co kilka sekund.",
		ETA:           "Zwykle gotowa po około {n} s",
		ETALate:       "Trwa dłużej niż zwykle (zwykle około {n} s)",
		Progress:      "Postęp",
		PhaseAsked:    "Zażądano wybudzenia",
		PhaseAccepted: "Uruchamianie",
		PhaseUp:       "Uruchomiona, czeka na odpowiedź",
		PhaseReady:    "Gotowa",
		Seconds:       "{n} s",
		LimitedTitle:  "{app} – nadal w uśpieniu",
		Limited:       "Z Twojego adresu zażądano zbyt wielu wybudzeń. Ta strona spróbuje ponownie za {n} s.",
	}},
	{Tag: language.Japanese, Dir: "ltr", Messages: Messages{
		Title:         "{app} を起動しています",
		ErrorTitle:    "{app} を起動できませんでした",
		DefaultApp:    "アプリケーション",
		Lead:          "利用がなかったため、アプリケーションはスリープしていました。準備ができしだい、このページから自動的に開きます。",
		GoingToSleep:  "スリープ処理中です。完了後すぐに起動します。",
		Waking:        "起動しています。1〜2分かかることがあります。",
		WakingETA:     "起動しています。",
		Almost:        "まもなく準備完了です。アプリケーションが起動中です。",
		Error:         "アプリケーションを起動できませんでした。このページは確認を続け、応答があればすぐに開きます。",
		Elapsed:       "待機時間 {n} 秒",
		RequestID:     "リクエストID",
		Node:          "ノード",
		NoScript:      "JavaScript が無効です。このページは数秒ごとに自動で再読み込みされます。",
		ETA:           "通常は約 {n} 秒で準備が整います",
		ETALate:       "通常より時間がかかっています（通常は約 {n} 秒）",
		Progress:      "進行状況",
		PhaseAsked:    "起動を要求しました",
		PhaseAccepted: "起動中",
		PhaseUp:       "起動済み、応答を待っています",
		PhaseReady:    "準備完了",
		Seconds:       "{n} 秒",
		LimitedTitle:  "{app} はまだスリープ中です",
		Limited:       "お使いのアドレスからの起動要求が多すぎます。このページは {n} 秒後に再試行します。",
	}},
	{Tag: language.SimplifiedChinese, Dir: "ltr", Messages: Messages{
		Title:         "{app} 正在唤醒",
		ErrorTitle:    "{app} 无法启动",
		DefaultApp:    "该应用",
		Lead:          "由于长时间无人使用，该应用已进入休眠。准备就绪后，本页面会自动打开它。",
		GoingToSleep:  "正在进入休眠，完成后将立即唤醒。",
		Waking:        "正在唤醒，可能需要一两分钟。",
		WakingETA:     "正在唤醒。",
		Almost:        "即将就绪：应用正在启动。",
		Error:         "应用无法启动。本页面会继续检查，一旦应用响应便立即打开。",
		Elapsed:       "已等待 {n} 秒",
		RequestID:     "请求 ID",
		Node:          "节点",
		NoScript:      "JavaScript 已禁用：本页面将每隔几秒自动刷新。",
		ETA:           "通常约 {n} 秒内就绪",
		ETALate:       "比平时耗时更长（通常约 {n} 秒）",
		Progress:      "进度",
		PhaseAsked:    "已请求唤醒",
		PhaseAccepted: "正在启动",
		PhaseUp:       "已启动，等待响应",
		PhaseReady:    "已就绪",
		Seconds:       "{n} 秒",
		LimitedTitle:  "{app} 仍在休眠",
		Limited:       "您的地址请求唤醒的次数过多。此页面将在 {n} 秒后重试。",
	}},
	{Tag: language.Arabic, Dir: "rtl", Messages: Messages{
		Title:         "جارٍ إيقاظ {app}",
		ErrorTitle:    "تعذّر تشغيل {app}",
		DefaultApp:    "التطبيق",
		Lead:          "وُضع التطبيق في وضع السكون لعدم استخدامه. ستفتحه هذه الصفحة فور جاهزيته.",
		GoingToSleep:  "جارٍ إدخاله في وضع السكون، وسيُوقَظ مباشرةً بعد ذلك.",
		Waking:        "جارٍ الإيقاظ. قد يستغرق ذلك دقيقة أو دقيقتين.",
		WakingETA:     "جارٍ الإيقاظ.",
		Almost:        "أوشك على الجاهزية: التطبيق قيد التشغيل.",
		Error:         "تعذّر تشغيل التطبيق. تواصل هذه الصفحة التحقق وستفتحه فور استجابته.",
		Elapsed:       "مدة الانتظار: {n} ثانية",
		RequestID:     "معرّف الطلب",
		Node:          "العقدة",
		NoScript:      "JavaScript معطّل: ستُعيد هذه الصفحة تحميل نفسها كل بضع ثوانٍ.",
		ETA:           "يجهز عادةً خلال {n} ثانية تقريبًا",
		ETALate:       "يستغرق وقتًا أطول من المعتاد (عادةً {n} ثانية تقريبًا)",
		Progress:      "التقدّم",
		PhaseAsked:    "طُلب الإيقاظ",
		PhaseAccepted: "جارٍ التشغيل",
		PhaseUp:       "بدأ التشغيل، بانتظار استجابته",
		PhaseReady:    "جاهز",
		Seconds:       "{n} ث",
		LimitedTitle:  "{app} لا يزال في وضع السكون",
		Limited:       "طُلب عدد كبير جدًا من عمليات الإيقاظ من عنوانك. ستعيد هذه الصفحة المحاولة بعد {n} ثانية.",
	}},
	{Tag: language.Hebrew, Dir: "rtl", Messages: Messages{
		Title:         "מעירים את {app}",
		ErrorTitle:    "לא ניתן היה להפעיל את {app}",
		DefaultApp:    "היישום",
		Lead:          "היישום הועבר למצב שינה כי איש לא השתמש בו. דף זה יפתח אותו ברגע שיהיה מוכן.",
		GoingToSleep:  "עובר למצב שינה, ויתעורר מיד לאחר מכן.",
		Waking:        "מתעורר. זה עשוי לקחת דקה או שתיים.",
		WakingETA:     "מתעורר.",
		Almost:        "כמעט מוכן: היישום עולה.",
		Error:         "לא ניתן היה להפעיל את היישום. דף זה ממשיך לבדוק ויפתח אותו ברגע שיגיב.",
		Elapsed:       "זמן המתנה: {n} שניות",
		RequestID:     "מזהה בקשה",
		Node:          "צומת",
		NoScript:      "JavaScript כבוי: דף זה נטען מחדש מעצמו כל כמה שניות.",
		ETA:           "בדרך כלל מוכן תוך כ-{n} שניות",
		ETALate:       "לוקח יותר זמן מהרגיל (בדרך כלל כ-{n} שניות)",
		Progress:      "התקדמות",
		PhaseAsked:    "התבקשה השכמה",
		PhaseAccepted: "מופעל",
		PhaseUp:       "הופעל, ממתין לתגובה",
		PhaseReady:    "מוכן",
		Seconds:       "{n} ש׳",
		LimitedTitle:  "{app} עדיין במצב שינה",
		Limited:       "התבקשו יותר מדי השכמות מהכתובת שלך. הדף ינסה שוב בעוד {n} שניות.",
	}},
}

// fill replaces the placeholder in msg with value.
func fill(msg, placeholder, value string) string {
	return strings.Replace(msg, placeholder, value, 1)
}

// around splits msg at the placeholder, so the value can be wrapped in its own element.
func around(msg, placeholder string) (before, after string) {
	before, after, _ = strings.Cut(msg, placeholder)
	return before, after
}
