"""Writes the quickstart's sample data: short product, restaurant, hotel, film and book reviews.

    python data/make_sample_data.py            # rewrites data/reviews/{train,dev}.tsv and data/reviews_corpus.txt

Everything is generated here from the word lists below (written for this project), with a fixed seed, so the
files are reproducible and carry no third-party text:

- `reviews/train.tsv`, `reviews/dev.tsv`: single sentences labelled 1 (positive) or 0 (negative), in the GLUE
  SST-2 layout (`sentence<TAB>label` with a header), so `run_classifier.py --task_name=sst-2` reads them as it
  reads the real SST-2. About a third of the sentences need more than a bag of words: a negated adjective ("not
  bland at all"), a contrast whose second clause decides ("was cold, but the staff were lovely"), "could have been
  better". The dev sentences never occur in the training set.
- `reviews_corpus.txt`: unlabelled reviews of several sentences, one sentence per line and a blank line between
  reviews (the `create_pretraining_data` input format), for learning the vocabulary and pretraining.
"""

from __future__ import annotations

import os
import random

SEED = 20261122
NUM_TRAIN, NUM_DEV, NUM_CORPUS_REVIEWS = 1200, 300, 900

DOMAINS = {
    "restaurant": dict(
        places=["restaurant", "place", "cafe", "bistro", "pizzeria", "diner"],
        items=[
            "the pasta",
            "the soup",
            "the steak",
            "the curry",
            "the bread",
            "the dessert",
            "the coffee",
            "the pizza",
            "the salad",
            "the fish",
            "the chicken",
            "the noodles",
            "the burger",
            "the chips",
        ],
        people=["the staff", "the waiter", "the waitress", "the chef", "the owner", "the manager"],
        aspects=["the service", "the atmosphere", "the wine list", "the music", "the menu", "the portions"],
        pos=["delicious", "tasty", "fresh", "perfectly cooked", "generous", "flavourful"],
        neg=["bland", "cold", "greasy", "stale", "overcooked", "tasteless", "soggy"],
        openings=[
            "We went there for a birthday dinner.",
            "I had lunch here with two colleagues.",
            "We booked a table for four on a Friday night.",
            "This was our first visit.",
            "We walked in without a reservation.",
            "My sister recommended this place.",
            "We ordered the set menu.",
            "It is a small family business near the market.",
        ],
    ),
    "hotel": dict(
        places=["hotel", "guest house", "inn", "resort", "hostel"],
        items=[
            "the room",
            "the bed",
            "the shower",
            "the breakfast",
            "the view",
            "the pool",
            "the bathroom",
            "the balcony",
            "the gym",
            "the lobby",
            "the pillows",
        ],
        people=["the receptionist", "the staff", "the housekeeper", "the porter", "the concierge"],
        aspects=["the location", "the wifi", "the parking", "the check-in", "the air conditioning"],
        pos=["spotless", "spacious", "comfortable", "quiet", "cosy", "clean"],
        neg=["dirty", "cramped", "noisy", "shabby", "damp", "tiny", "smelly"],
        openings=[
            "We stayed three nights in October.",
            "I stayed here for a conference.",
            "We booked this hotel for our anniversary.",
            "It was a last minute booking.",
            "We arrived late in the evening.",
            "The hotel is close to the station.",
            "We had a room on the fourth floor.",
            "I travel for work and stay in many hotels.",
        ],
    ),
    "gadget": dict(
        places=["phone", "laptop", "headset", "tablet", "speaker", "camera", "printer", "smartwatch"],
        items=[
            "the battery",
            "the screen",
            "the camera",
            "the keyboard",
            "the speaker",
            "the charger",
            "the case",
            "the app",
            "the sound",
            "the microphone",
            "the touchpad",
            "the fan",
        ],
        people=["customer support", "the seller", "the delivery driver", "the support team"],
        aspects=["the build quality", "the setup", "the design", "the packaging", "the price", "the software"],
        pos=["sturdy", "fast", "reliable", "sharp", "responsive", "long lasting"],
        neg=["flimsy", "slow", "unreliable", "blurry", "laggy", "fragile", "buggy"],
        openings=[
            "I bought this last month.",
            "I have used it every day for three weeks.",
            "This replaced my old one.",
            "I ordered it online and it arrived on Monday.",
            "I use it mostly for work.",
            "It was a birthday present.",
            "I compared several models before buying.",
            "I have owned it for about a year.",
        ],
    ),
    "film": dict(
        places=["film", "movie", "series", "documentary", "thriller", "comedy"],
        items=[
            "the plot",
            "the acting",
            "the ending",
            "the soundtrack",
            "the dialogue",
            "the script",
            "the special effects",
            "the pacing",
            "the cinematography",
            "the first half",
            "the twist",
        ],
        people=["the lead actor", "the director", "the cast", "the villain", "the heroine"],
        aspects=["the story", "the humour", "the costumes", "the editing", "the running time"],
        pos=["gripping", "moving", "clever", "funny", "convincing", "stunning"],
        neg=["predictable", "confusing", "clumsy", "wooden", "forgettable", "tedious", "messy"],
        openings=[
            "I watched it on a Sunday afternoon.",
            "We saw it at the cinema on opening night.",
            "I went in with low expectations.",
            "My friends had talked about it for weeks.",
            "I watched the whole season in two days.",
            "It is based on a true story.",
            "It runs for just over two hours.",
            "I saw the trailer last year.",
        ],
    ),
    "book": dict(
        places=["book", "novel", "memoir", "cookbook", "collection", "guide"],
        items=[
            "the story",
            "the writing",
            "the first chapter",
            "the translation",
            "the ending",
            "the prose",
            "the plot",
            "the illustrations",
            "the recipes",
            "the final chapter",
        ],
        people=["the author", "the narrator", "the main character", "the characters"],
        aspects=["the structure", "the research", "the cover", "the index", "the length"],
        pos=["beautiful", "insightful", "engaging", "witty", "thoughtful", "vivid"],
        neg=["dull", "shallow", "repetitive", "clumsy", "dry", "confusing", "padded"],
        openings=[
            "I read it on holiday.",
            "It was chosen by my book club.",
            "I finished it in one weekend.",
            "A friend lent me her copy.",
            "I read the paperback edition.",
            "I had read the author's first book.",
            "I listened to the audio version on my commute.",
            "It was on the bestseller list for months.",
        ],
    ),
}

# Words that fit any domain; "people" words need adjectives for people.
POS_ADJ = [
    "excellent",
    "wonderful",
    "superb",
    "fantastic",
    "great",
    "lovely",
    "brilliant",
    "perfect",
    "outstanding",
    "impressive",
    "pleasant",
    "fine",
    "amazing",
    "good",
    "terrific",
]
NEG_ADJ = [
    "terrible",
    "awful",
    "disappointing",
    "poor",
    "dreadful",
    "mediocre",
    "horrible",
    "bad",
    "appalling",
    "awkward",
    "useless",
    "frustrating",
    "weak",
    "sloppy",
    "miserable",
]
POS_PEOPLE = ["friendly", "helpful", "kind", "attentive", "polite", "patient", "welcoming", "professional"]
NEG_PEOPLE = ["rude", "unhelpful", "careless", "dismissive", "arrogant", "slow", "clueless", "impatient"]
ADVERBS = [
    "",
    "",
    "",
    "really ",
    "very ",
    "truly ",
    "quite ",
    "absolutely ",
    "remarkably ",
    "so ",
    "genuinely ",
    "rather ",
    "extremely ",
]
POS_VERBS = ["loved", "enjoyed", "adored", "liked", "was impressed by", "was delighted with", "appreciated"]
NEG_VERBS = [
    "hated",
    "disliked",
    "was disappointed by",
    "could not stand",
    "regretted",
    "was annoyed by",
    "was let down by",
]
POS_END = [
    "I would definitely recommend this {place}.",
    "We will certainly come back.",
    "Five stars from me.",
    "Money well spent.",
    "I would buy it again.",
    "Highly recommended.",
    "I can not wait to go back.",
    "Worth every penny.",
    "I have already told my friends about it.",
    "A real gem.",
]
NEG_END = [
    "I would not recommend this {place} to anyone.",
    "Never again.",
    "Avoid this {place}.",
    "One star, and that is generous.",
    "A waste of money.",
    "I want my money back.",
    "Save yourself the trouble.",
    "I will not be going back.",
    "What a letdown.",
    "Not worth the price.",
]
POS_SUMMARY = ["experience", "surprise", "choice", "find", "treat", "discovery"]
NEG_SUMMARY = ["experience", "mistake", "disappointment", "waste of time", "letdown", "shame"]
WAS = ["was", "is", "was", "seemed", "felt"]


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


PLURALS = {
    "the staff",
    "the cast",
    "the characters",
    "the portions",
    "the pillows",
    "the chips",
    "the noodles",
    "the costumes",
    "the recipes",
    "the special effects",
    "the illustrations",
}


def _be(thing: str) -> str:
    return "were" if thing in PLURALS else "was"


class _Writer:
    """Draws review sentences of one polarity (1 positive, 0 negative) for a domain."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def adj(self, d: dict, label: int, kind: str = "aspects") -> str:
        """An adjective that fits the kind of thing: domain words for items, people words for people."""
        if kind == "people":
            return self.rng.choice(POS_PEOPLE if label else NEG_PEOPLE)
        if kind == "items":
            return self.rng.choice((d["pos"] + POS_ADJ) if label else (d["neg"] + NEG_ADJ))
        return self.rng.choice(POS_ADJ if label else NEG_ADJ)

    def thing(self, d: dict, other_than: str | None = None) -> tuple[str, str]:
        while True:
            kind = self.rng.choice(["items", "items", "aspects", "people"])
            thing = self.rng.choice(d[kind])
            if thing != other_than:
                return thing, kind

    def plain(self, d: dict, label: int) -> str:
        """A sentence whose words alone give its polarity."""
        r = self.rng
        thing, kind = self.thing(d)
        form = r.randrange(7)
        if form == 0:
            return f"{_cap(thing)} {_be(thing)} {r.choice(ADVERBS)}{self.adj(d, label, kind)}."
        if form == 1:
            other, other_kind = self.thing(d, other_than=thing)
            return (
                f"{_cap(thing)} {_be(thing)} {self.adj(d, label, kind)} and {other} {_be(other)} "
                f"{r.choice(ADVERBS)}{self.adj(d, label, other_kind)}."
            )
        if form == 2:
            return f"I {r.choice(POS_VERBS if label else NEG_VERBS)} {thing}."
        if form == 3:
            adjective = self.adj(d, label)
            return f"What {_article(adjective)} {adjective} {r.choice(d['places'])}!"
        if form == 4:
            noun = r.choice(POS_SUMMARY if label else NEG_SUMMARY)
            adjective = self.adj(d, label)
            opening = r.choice(["Overall", "All in all", "In short", "Honestly"])
            return f"{opening}, {_article(adjective)} {adjective} {noun}."
        if form == 5:
            return r.choice(POS_END if label else NEG_END).format(place=r.choice(d["places"]))
        return f"This {r.choice(d['places'])} was {r.choice(ADVERBS)}{self.adj(d, label)}."

    def tricky(self, d: dict, label: int) -> str:
        """A sentence where a bag of words misleads: negation, contrast, 'could have been better'."""
        r = self.rng
        thing, kind = self.thing(d)
        other, other_kind = self.thing(d, other_than=thing)
        form = r.randrange(6)
        if form == 0:  # a negated adjective of the other polarity
            return f"{_cap(thing)} {_be(thing)} not {self.adj(d, 1 - label, kind)} at all."
        if form == 1:  # the clause after "but" decides
            return (
                f"{_cap(thing)} {_be(thing)} {self.adj(d, 1 - label, kind)}, but {other} {_be(other)} "
                f"{r.choice(ADVERBS)}{self.adj(d, label, other_kind)}."
            )
        if form == 2:
            return (
                f"Although {thing} {_be(thing)} {self.adj(d, 1 - label, kind)}, {other} {_be(other)} "
                f"{self.adj(d, label, other_kind)}."
            )
        if form == 3:
            return f"{_cap(thing)} could {'not ' if label else ''}have been better."
        if form == 4:  # a negated verb
            if label:
                opener = r.choice(["I was not disappointed by", "I could not fault", "I had no complaints about"])
                return f"{opener} {thing}."
            return f"I did not {r.choice(['enjoy', 'like', 'love', 'care for'])} {thing}."
        adjective = self.adj(d, label)
        return f"I expected {'little' if label else 'a lot'} from this {r.choice(d['places'])}, and it was {adjective}."

    def sentence(self, d: dict, label: int, tricky_share: float = 0.35) -> str:
        return self.tricky(d, label) if self.rng.random() < tricky_share else self.plain(d, label)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def labelled_sentences(rng: random.Random, count: int, exclude: set) -> list[tuple[str, int]]:
    writer = _Writer(rng)
    out, seen = [], set(exclude)
    while len(out) < count:
        label = len(out) % 2
        sentence = writer.sentence(DOMAINS[rng.choice(list(DOMAINS))], label)
        if sentence not in seen:
            seen.add(sentence)
            out.append((sentence, label))
    rng.shuffle(out)
    return out


def corpus_reviews(rng: random.Random, count: int) -> list[list[str]]:
    """Reviews of 3 to 7 sentences: an opening, opinions (mostly of the review's polarity) and a verdict."""
    writer = _Writer(rng)
    reviews = []
    for _ in range(count):
        d = DOMAINS[rng.choice(list(DOMAINS))]
        label = rng.randrange(2)
        lines = [rng.choice(d["openings"])]
        for _ in range(rng.randint(1, 5)):
            lines.append(writer.sentence(d, label if rng.random() < 0.85 else 1 - label))
        lines.append(rng.choice(POS_END if label else NEG_END).format(place=rng.choice(d["places"])))
        reviews.append(lines)
    return reviews


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rng = random.Random(SEED)
    dev = labelled_sentences(rng, NUM_DEV, exclude=set())
    train = labelled_sentences(rng, NUM_TRAIN, exclude={s for s, _ in dev})
    os.makedirs(os.path.join(here, "reviews"), exist_ok=True)
    for name, rows in (("train", train), ("dev", dev)):
        with open(os.path.join(here, "reviews", f"{name}.tsv"), "w", encoding="utf-8", newline="\n") as f:
            f.write("sentence\tlabel\n")
            f.writelines(f"{sentence}\t{label}\n" for sentence, label in rows)
    with open(os.path.join(here, "reviews_corpus.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join("\n".join(review) + "\n" for review in corpus_reviews(rng, NUM_CORPUS_REVIEWS)))


if __name__ == "__main__":
    main()
