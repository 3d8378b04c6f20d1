"""Defaults. Override in ``instance/config.py`` or with ``ARENA_*`` environment variables
(``ARENA_DATABASE_URL``, ``ARENA_ELO_K=8``, ...; values are parsed as JSON when they can be)."""

from pathlib import Path
from typing import ClassVar

PACKAGE_DIR = Path(__file__).resolve().parent
# SECRET_KEY signs cookies and CSRF tokens; PSEUDONYM_KEY keys the voter pseudonyms in exports
# (a separate key, so rotating one never touches the other).
SECRET_SETTINGS = ("SECRET_KEY", "PSEUDONYM_KEY")

def N_(text: str) -> str:
    """Marks a string for translation where it is defined (``pybabel extract -k N_``); it is
    translated where it is shown (arena.web.i18n)."""
    return text


# The languages of the voter pages (arena.web.i18n): code -> (name in that language, text
# direction). Votes record which one the page was in.
LANGUAGES = {
    "en": ("English", "ltr"),
    "es": ("Español", "ltr"),
    "pt": ("Português", "ltr"),
    "hi": ("हिन्दी", "ltr"),
    "id": ("Bahasa Indonesia", "ltr"),
    "zh": ("简体中文", "ltr"),
    "ar": ("العربية", "rtl"),
}

class Defaults:
    # Database: None means SQLite (WAL) at <instance>/arena.sqlite3.
    DATABASE_URL = None

    # Where image files live: the folder IMAGE_DIR (default <instance>/images), or with
    # STORAGE_URL = "s3://bucket/prefix" a bucket reached through boto3's AWS_* variables.
    IMAGE_DIR = None
    STORAGE_URL = None
    IMAGE_MAX_PIXELS = 40_000_000
    IMAGE_MAX_SIDE = 10_000
    IMAGE_MAX_BYTES = 20 * 1024 * 1024
    # Pillow's buffer for a decoded upload (4 bytes a pixel in RGB): the memory one costs
    IMAGE_MAX_DECODED_BYTES = 160_000_000
    MAX_CONTENT_LENGTH = 25 * 1024 * 1024  # one upload request
    MANIFEST_MAX_BYTES = 4 * 1024 * 1024  # a manifest.csv (about 100,000 lines)
    IMAGES_PER_PROMPT = 4  # most images one model may have per prompt
    # Every image a voter or evaluator sees is a centre-cropped square at these sizes (px),
    # WebP at this quality: one size and one encoding, whatever the model or source.
    # 1024 for 3x phones: a task image is ~290-340 CSS px wide there (900-1000 device px).
    PRESENT_SIZES = (384, 768, 1024)
    # The full-screen view's larger square, where both of a task's images are that large at
    # source (never upscaled): made when first asked for
    ZOOM_SIZES = (2048,)
    PRESENT_QUALITY = 82
    HYPE_PRESENT_SIZE = 768  # HYPE images and masks, padded to one byte length per run

    # Online Elo (docs/design.md): base 10, scale 400, initial 1000, K=4.
    ELO_K = 4.0
    ELO_PUBLIC_ORDERS = 32  # keyed orders the public Elo table averages (benchmarks/elo_orders.py)
    ELO_BASE = 10.0
    ELO_SCALE = 400.0
    ELO_INITIAL = 1000.0

    # Sessions and matchmaking.
    TASKS_PER_SESSION = 3
    TARGET_VOTES = 26
    VALIDATION_RATE = 0.5  # probability that a session carries one hidden validation task
    # Active allocation and early stopping (arena.campaigns.allocation): the votes each
    # refresh plans for, the confidence at which a pair's order is settled, and the share of
    # the votes spread over every unsettled pair rather than the adjacent ones.
    ALLOCATION_BUDGET = 2000
    ALLOCATION_LEVEL = 0.95
    ALLOCATION_EXPLORATION = 0.2
    TRUST_PENALTY = 0.25  # trust lost on a wrong validation answer (trust starts at 1.0)
    TRUST_REWARD = 0.05
    # Gold pairs made from a campaign's own images: the damaged ones made at publishing
    # (the rest as voters need them; swapped alignment pairs are all made at once).
    GOLD_INITIAL_DAMAGED = 8
    GOLD_MAX_DAMAGED = 400  # damaged copies per campaign and criterion, at most
    # An ordinary pair with this many counted votes whose majority's share is above this at
    # 95% (twelve of twelve) is turned gold for its remaining votes (consensus gold: nothing
    # tells it from an ordinary pair, pixels included); 0 votes: never
    CONSENSUS_MIN_VOTES = 12
    CONSENSUS_SHARE = 0.8
    CONSENSUS_MAX_SHARE = 0.1  # of a criterion's gold pairs: settled pairs look lopsided
    # Votes of a voter whose trust is below this do not count (one failed gold pair puts a
    # new voter at 0.75; a passed one then brings them back to 0.8).
    TRUST_FLOOR = 0.8
    # An image reported (broken, offensive, other) by this many different voters in good
    # standing is paused at once, until an operator restores or removes it
    # (arena.voting.image_reports).
    REPORTS_TO_PAUSE = 3
    # The figures public pages show (a campaign's progress, the campaign list, the
    # leaderboards, an owner's vote counts) are taken at most once per this many seconds and
    # shared by every worker: no vote moves them before the next period, so a reload does not
    # tell a voter whether their last answer was a gold pair (arena.analysis.published).
    PUBLISHED_PERIOD_S = 3600
    # A slice of the public leaderboard (a country, a language, an age group, a day) with
    # fewer voters than this shows none of its figures: it could be one voter's own votes.
    PUBLIC_SLICE_MIN_VOTERS = 20
    # A voter sees their own ranking of a criterion's models once this many of their votes
    # on it count (arena.analysis.own)
    OWN_RANKING_MIN_VOTES = 30
    # Votes faster than this (ms from the voter's previous action in the session, on the
    # server's clock) are stored but do not count: nobody judges two images quicker. None:
    # each criterion's own (arena.criteria); a dict is the whole table (a criterion it does
    # not name has no floor).
    MIN_VOTE_MS: ClassVar[dict[str, int] | None] = None
    # Criteria beyond the built-in three (arena.criteria): [{"name", "question", ...}]
    EXTRA_CRITERIA: ClassVar[list] = []
    MAX_RESPONSE_MS = 30 * 60 * 1000
    # Alignment captions appear one word at a time, this many ms per word; the server
    # accepts "I have read it" only once the whole reveal could have been seen.
    REVEAL_WORD_MS = 220

    # Serving (gunicorn.conf.py, `arena serve`): the address, and processes x threads
    # (None: one process per core, at most 8; threads 2 on SQLite, 4 on PostgreSQL)
    BIND = "127.0.0.1:5000"
    WORKERS = None
    THREADS = None

    # Static files are linked with a content hash (templates' ``asset()``), so cache them long.
    SEND_FILE_MAX_AGE_DEFAULT = 31_536_000

    # Security. SECRET_KEY signs cookies; PSEUDONYM_KEY keys voter pseudonyms in exports.
    # Both are written once to instance/config.py by `arena demo`, `arena db upgrade` or
    # `arena serve`.
    SECRET_KEY = None
    PSEUDONYM_KEY = None
    TRUSTED_PROXIES = 0  # reverse proxies in front whose X-Forwarded-For/-Proto/-Host count
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    # HTTPS requests get Secure cookies anyway (arena.web.secure_cookies); True: on HTTP too
    SESSION_COOKIE_SECURE = False
    PERMANENT_SESSION_LIFETIME = 60 * 60 * 24 * 365
    # a year-long cookie needs no re-signing on every response (images included)
    SESSION_REFRESH_EACH_REQUEST = False
    WTF_CSRF_TIME_LIMIT = None  # tied to the session cookie instead of a clock
    # memory:// counts in one process (the embedded server runs one); several processes or
    # machines share the counts only through redis://127.0.0.1:6379 (the limits package's)
    RATELIMIT_STORAGE_URI = "memory://"
    RATELIMIT_ENABLED = True  # arena.web.limits
    RATELIMIT_HEADERS_ENABLED = True
    RATELIMIT_KEY_PREFIX = ""  # before every counter's key (several apps on one Redis)
    # The job queue (arena.infra.jobs): None, a SQLite file <instance>/jobs.sqlite3 that the
    # embedded server's own worker reads; redis://... or postgresql://... for several servers
    JOBS_URL = None
    JOBS_NAME = "arena"  # the queue's name in its store (several sites on one Redis)
    # "embedded": the embedded server (`arena serve`) runs a job worker beside the app;
    # "external": an `arena worker` of its own takes them, as beside gunicorn
    JOBS_WORKER = "embedded"
    JOBS_THREADS = 1  # the worker's threads (gold fills, releases, the tick: few at a time)
    TICK_EVERY_MIN = 5  # the worker runs the period's tick so often; 0: not (a timer does)
    # Redis (or memcached) down: count in each process's memory meanwhile, with a warning in
    # the log, and go back to the shared store on its own when it answers again
    RATELIMIT_IN_MEMORY_FALLBACK_ENABLED = True
    # per voter (token or cookie) and per network (a keyed hash of its /24 or /48 prefix)
    RATE_LIMIT_SESSIONS = "60/hour"
    RATE_LIMIT_VOTES = "600/hour"
    RATE_LIMIT_NETWORK_SESSIONS = "600/hour"
    RATE_LIMIT_NETWORK_VOTES = "6000/hour"
    # new identities per network, on every route: at most a third of the hour's at once
    RATE_LIMIT_NEW_VOTERS = "30/hour;10/10minute"
    # Past that budget, a newcomer whose page answers a proof of work (a few seconds of a
    # phone's work; arena.web.proof) is let in on a budget of its own: a classroom or a
    # carrier's shared address is not turned away. Off unless the operator turns it on.
    NEW_VOTER_PROOF = False
    NEW_VOTER_PROOF_PREFIX = "0000"  # hex digits the answer's hash starts with: 65,536 tries
    NEW_VOTER_PROOF_MINUTES = 10  # a challenge's life
    # or a third party's check (arena.web.proof): "turnstile" or "hcaptcha", with the keys
    # the provider gives the site; CAPTCHA_VERIFY_URL overrides its siteverify address
    NEW_VOTER_CAPTCHA = ""
    CAPTCHA_SITE_KEY = ""
    CAPTCHA_SECRET_KEY = ""
    CAPTCHA_VERIFY_URL = ""
    RATE_LIMIT_PROVEN_VOTERS = "60/hour;20/10minute"
    RATE_LIMIT_UPLOADS = "5000/hour"
    RATE_LIMIT_SIGN_IN = "20/hour"  # owner and operator sign-in forms, per network
    # wrong bearer tokens sent to the API, per network: past them, its requests with a token
    # get 429 until the window turns
    RATE_LIMIT_BAD_TOKENS = "30/hour;10/minute"
    # seconds one upload request (the form without JavaScript posts every file at once)
    # spends storing files; the rest are listed as not processed, to send again
    UPLOAD_REQUEST_SECONDS = 20
    # /api/v1/health/ready fails below this many MB free where the SQLite file or images live
    READY_MIN_FREE_MB = 32
    # The performance devices on (arena.infra.devices: writer-queue), comma-separated; ""
    # is plain SQLAlchemy, to measure what each earns.
    DEVICES = "writer-queue"
    # Server-Timing headers (the app's time and SQL statement count per request), for
    # benchmarks/ingest.py and for profiling a deployment; off by default. Never on where
    # voters reach the server: a gold answer's vote runs one statement fewer than an
    # ordinary one, and the header says so.
    SERVER_TIMING = False
    # Flask-Compress: whole responses only. Its streaming mode drops the response's close()
    # (a static file stayed open until garbage collection; an export's generator would
    # never be closed on a client that left), so streamed exports go uncompressed and
    # static files are read whole and compressed (once per client: cached for a year).
    COMPRESS_STREAMS = False

    # Rankings. A margin category (a continent, an age group) with fewer voters or votes than
    # these is not reweighted by post-stratification; it keeps its sample share and is flagged.
    POSTSTRAT_MIN_VOTERS = 20
    POSTSTRAT_MIN_VOTES = 100
    # ... and when such categories and those without votes hold more than this share of a
    # margin's population, the table is refused: it would be the other groups' preferences
    POSTSTRAT_MAX_UNREPRESENTED = 0.05
    # ... and under it, when what their preferences could move a rating (a bias no sample
    # size shrinks) passes this share of the rating's interval half-width: the intervals
    # would cover less than they say (a fifth: still 93% at 95% whatever those groups prefer)
    POSTSTRAT_MAX_SHIFT = 0.2
    # Fewer resampling units (voters or prompts) than this, and clustered intervals are flagged.
    MIN_CLUSTERS = 20
    # a lead that removing fewer than this share of the voters undoes is flagged fragile
    FRAGILE_SHARE = 0.01
    # the rollup timer holds out the voters who favour one model together beyond the crowd
    # (arena.analysis.suspects.screen, from arena.campaigns.period), once a period, at this
    # chance of a false alarm
    SCREEN_HOLDS = True
    SCREEN_ALPHA = 0.01
    # ... and keeps out of public figures, until an operator looks, the fewest voters of a
    # cohort (new in one period, day or week) whose votes together move the ranking beyond
    # what voters like the crowd would (arena.analysis.cohorts), at this chance of a false
    # alarm per run
    SCREEN_COHORT_ALPHA = 0.001
    # A voter's votes count in public figures (and every earlier one with them) once they
    # have answered this many gold pairs right, each in its own session, the first and the
    # last at least this many hours apart (arena.voting.trust); 0: from their first vote.
    # A panel's participants and the demo's simulated crowd are trusted from the start.
    EARN_TRUST_GOLD = 2
    EARN_TRUST_HOURS = 20

    # HYPE (Zhou et al. 2019); shorten the counts for tests and pilots.
    HYPE_QUALIFICATION_TRIALS = 100
    HYPE_QUALIFICATION_PASS = 0.65  # on reals and on fakes
    HYPE_RETRY_HOURS = 24  # before a failed evaluator may qualify again
    HYPE_INFINITY_TRIALS = 100
    HYPE_TIME_BLOCKS = 3
    HYPE_TIME_BLOCK_TRIALS = 150
    HYPE_STAIRCASE = "weighted"  # or "three-in-a-row" (the paper's words read literally)
    # The server bounds what HYPE-time pages report (arena.hype.timing): refresh intervals a
    # display has, the 3-2-1 countdown before each image, and how many trials an evaluator
    # may void (tab hidden, frame dropped, or a report that does not add up) before their
    # stage is flagged and left out of the scores.
    HYPE_FRAME_MS = (4.0, 34.0)
    HYPE_COUNTDOWN_MS = 1500
    HYPE_VOID_LIMIT = 0.1
    HYPE_ANSWER_LIMIT_MS = 60_000  # after the image went; a later answer is not believed
    # a finished stage whose evaluator was right this rarely (one-sided binomial p-value
    # against guessing) is flagged "below chance" and left out: someone answering the
    # opposite on purpose steers a staircase up; a HYPE-time stage right this rarely at its
    # shorter half of exposures alone is flagged "steered"
    HYPE_BELOW_CHANCE_P = 0.01

    # Demo campaign.
    # the thank-you card starts the next session after this many seconds unless the voter
    # stops it (0: only by the button)
    NEXT_SESSION_SECONDS = 6

    DEMO_PROMPTS = 24
    DEMO_IMAGES_PER_MODEL = 2  # at 1024 px (four made the first start 5.6 min here)
    DEMO_IMAGE_SIZE = 1024  # pixels a side: sharp on a 3x phone (PRESENT_SIZES' largest)
