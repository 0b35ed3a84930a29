"""One-line plain readings of the dashboards' headline numbers — what a κ, a calibrated gain or a
count of separable resamples means for the study at hand — each said in the terms of
docs/statistics.md (served at ``dashboards:statistics``), where the definitions are."""

from django import template

register = template.Library()

# Landis & Koch (1977), the bands docs/statistics.md § Agreement names.
_KAPPA_BANDS = (
    (0.0, "worse than chance: the judge and the people disagree more often than two raters guessing with "
          "these label frequencies would; check that the labels mean the same to both"),
    (0.2, "slight: hardly better than chance — the judge's verdicts agree with people about as often as "
          "guessing with the same label frequencies would; do not let the judge stand in for people here"),
    (0.4, "fair: better than chance but far from people's judgement; use the judge only to order what people "
          "look at"),
    (0.6, "moderate: the judge often agrees with people but misses a large share; audit its verdicts on a sample"),
    (0.8, "substantial: the judge can stand in for people on most items; keep auditing a sample"),
    (float("inf"), "almost perfect: the judge agrees with people nearly as well as it could"),
)


@register.filter
def kappa_reading(group) -> str:
    """The reading of a Cohen's κ (``group``: a dict with ``kappa``, optionally ``accuracy`` and ``n``)."""
    kappa = group.get("kappa") if isinstance(group, dict) else group
    if kappa is None:
        return ""
    text = next(reading for bound, reading in _KAPPA_BANDS if kappa < bound)
    accuracy = group.get("accuracy") if isinstance(group, dict) else None
    if accuracy is not None and accuracy >= 0.7 and kappa < 0.2:
        text += (f" (the {accuracy:.0%} raw agreement comes from one label being far more common: "
                 "κ discounts what agreeing on it by chance would give)")
    n = group.get("n") if isinstance(group, dict) else None
    if n is not None and n < 30:
        text += f"; only {n} labels, so this reading can still change"
    return f"κ {kappa:.2f}: {text}."


@register.filter
def gain_reading(gain) -> str:
    """The reading of a calibrated score's gain, (experts-only width / calibrated width)²."""
    if gain is None:
        return ""
    if gain < 1.05:
        return (f"×{gain:.2f}: the judge adds (almost) nothing here — its scores do not follow the experts' "
                "labels closely enough, so the calibrated interval is as wide as the experts' alone; more expert "
                "labels, not the judge, will narrow it.")
    return (f"×{gain:.2f}: with the judge, the experts' labels are worth {gain:.1f} times as many — the calibrated "
            "interval is as narrow as that many labels alone would make it.")


@register.filter
def separable_reading(ranking) -> str:
    """The reading of the human ranking's separable bootstrap resamples (``ranking``: its dict)."""
    n_separable, n_resamples = ranking.get("n_separable_resamples"), ranking.get("n_resamples")
    if n_separable is None or not n_resamples:
        return ""
    if n_separable == 0:
        return (f"None of the {n_resamples} resamples is separable: every strength and interval comes from the "
                "comparisons alone.")
    share = n_separable / n_resamples
    return (f"{n_separable} of {n_resamples} resamples ({share:.0%}) are separable: in them some system won (or lost) "
            "every comparison it had, so the data alone put its strength at infinity and a weak prior holds it; "
            "its interval is wider or one-sided — " + (
                "most of the ranking rests on few comparisons: collect more between systems close to each other."
                if share >= 0.2 else "a few systems need more comparisons before their rank is firm."))
