"""Campaign output: adversarial samples written to disk as they are found, and the gallery
entries the JSON and HTML reports show. Both listen to a campaign; the search itself
writes nothing."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import shutil
import tempfile
import weakref
import zipfile
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Sequence

import numpy as np

from ..config.paths import check_output_dir
from ..errors import DataFileError
from ..files import as_path, check_replaceable, write_atomic
from ..generation.campaign import Campaign
from ..generation.results import SAMPLE_PART, AdversarialSample, CampaignResult
from ..validation import check_bool, path_text, printable
from .images import png_bytes, side_by_side

#: How many adversarial samples a report's gallery shows per campaign.
GALLERY = 8
#: The file that marks a folder as a campaign's output from its first sample on
MARKER = ".pytest-rnncov-samples"
#: The suffix of an earlier campaign's file set aside (hidden: ``.NAME.removed``)
ASIDE = ".removed"
#: The files a SampleWriter writes (images: IMAGE_PREFIX...png)
SUMMARY, ARRAYS, TEXT, IMAGE_PREFIX = "summary.json", "adversarial.npz", "adversarial.txt", "adv_"
#: How many samples get a PNG (the first found; adversarial.npz holds every one)
MAX_IMAGES = 1000
#: The arrays of adversarial.npz, and the field of a sample each stacks
COLUMNS = {
    "cases": "case",
    "seeds": "seed",
    "seed_index": "seed_index",
    "case_outputs": "case_output",
    "seed_outputs": "seed_output",
    "distances": "distance",
}
#: bytes copied at a time from a spool into a file
COPY_BYTES = 16 * 2**20


def gallery_entries(
    samples: Sequence[AdversarialSample], clip: Any = None, limit: int = GALLERY
) -> list[dict[str, Any]]:
    """A few adversarial samples beside their seeds, JSON-ready (arrays rounded)."""
    out = []
    for sample in samples[:limit]:
        seed, case = sample.seed, sample.case
        if not isinstance(seed, str):
            seed = np.round(np.asarray(seed, np.float64), 4).tolist()
            case = np.round(np.asarray(case, np.float64), 4).tolist()
        out.append(
            {
                "seed_index": sample.seed_index,
                "seed": seed,
                "case": case,
                "seed_decision": sample.seed_decision,
                "case_decision": sample.case_decision,
                "distance": float(sample.distance),
                "clip": [float(c) for c in clip or ()],
            }
        )
    return out


class SampleWriter:
    """Writes a campaign's adversarial samples into ``directory`` as they are found.

    Images (2-D cases): a PNG for each of the first MAX_IMAGES samples (seed | case |
    difference, a small image scaled up by an integer factor, ``images.upscale_factor``),
    named ``adv_NNNNN_seed<i>_<from>to<to>.png``, written when the sample is found and
    replaced by its shrunk version once shrinking finished; text and SMILES: a line each in
    ``adversarial.txt``, rewritten whenever the samples found doubled and once shrinking
    finished (so writing it costs time in proportion to the samples, not their square). At
    the end: ``adversarial.npz`` (cases, seeds, seed indices, outputs, distances) for array
    cases, every sample, and ``summary.json`` (which says whether the samples were shrunk).
    Every file is written atomically, so an interrupt at any point leaves whole files: the
    samples found so far (an interrupted ``run()`` finishes and writes them all), shrunk or
    as found. The writer holds at most SAMPLE_PART samples in memory: what the files need
    of each (its arrays, or its line of text) goes to unlinked temporary files (in
    ``TMPDIR``) SAMPLE_PART samples at a time, all or none, so a campaign that finds
    millions of samples saves them in bounded memory; the files are released once the
    summary is written, or once a write failed for good.

    A write that fails (a full disk) raises DataFileError, which stops the campaign; with
    ``keep_going=True`` it is kept in ``error`` instead, the writer writes nothing more for
    that campaign and the campaign goes on (the pytest plugin's writers: a full disk costs
    the samples, never the campaign or its coverage).

    An earlier campaign's files in the folder are set aside (renamed ``.NAME.removed``) at
    this campaign's first file and removed once its ``summary.json`` is written; a write
    that fails before this campaign wrote any file puts them back. From its first file to
    its summary the writer holds a lock on the folder's marker file: a second campaign
    writing there meanwhile (in this process or another) gets DataFileError instead of
    removing the first one's files.
    """

    def __init__(self, directory: str | os.PathLike[str], *, keep_going: bool = False) -> None:
        self.directory = check_output_dir(
            as_path(directory, "campaign output folder"), "campaign output folder"
        )
        self.keep_going = check_bool("keep_going", keep_going)
        #: why a write failed (``keep_going``): this campaign's samples are not all saved
        self.error: str | None = None
        self._check_replaceable()
        #: what the files need of the samples received so far
        self._spool = _Spool(arrays=True)
        #: every sample the files are to hold at the end: after shrinking (``on_shrunk``),
        #: or as found (the campaign's ``samples``, read when it finishes); None until then
        self._final: Sequence[AdversarialSample] | None = None
        #: whether ``_final`` holds shrunk samples (which replace the ones found), and
        #: whether the spool holds ``_final`` already
        self._final_shrunk = self._spooled_final = False
        #: the PNG of each of the first MAX_IMAGES samples (None: none was written)
        self._names: list[str | None] = []
        #: how many first PNGs show the samples the files hold (an interrupted one and the
        #: ones after it are written again at the end)
        self._png_ok = 0
        #: how many samples adversarial.txt holds
        self._in_text = 0
        self._started = False
        #: the campaign whose samples the folder holds (a writer reused for another starts
        #: the folder afresh)
        self._campaign: weakref.ref[Campaign] | None = None
        #: whether the campaign's files are all written (its summary.json last)
        self.saved = False
        #: the earlier campaign's files, set aside until this one's summary is written
        self._aside: list[tuple[Path, Path]] = []
        #: whether a file of this campaign was written
        self._wrote = False
        #: releases the lock on the folder (held from the first file to the summary)
        self._lock: Callable[[], None] | None = None
        #: whether ``_aside`` holds files an unfinished campaign set aside before this one
        self._restores_fallback = False

    def _for(self, campaign: Campaign) -> None:
        """Start afresh when ``campaign`` is not the one this writer wrote for: its samples
        replace the other's in the folder, never join them."""
        if self._campaign is not None and self._campaign() is campaign:
            return
        self._release()
        self._aside = []  # an earlier campaign's: left aside, never put back over another's
        self._restores_fallback = False
        self._campaign = weakref.ref(campaign)
        self._spool.close()
        self._spool = _Spool(campaign.mutator.array_cases)
        self._final, self._final_shrunk, self._spooled_final = None, False, False
        self._names, self._png_ok, self._started, self.saved = [], 0, False, False
        self._in_text, self.error, self._wrote = 0, None, False

    def _release(self) -> None:
        if self._lock is not None:
            self._lock()
            self._lock = None

    def _write(
        self,
        path: Path,
        content: str | bytes | Callable[[BinaryIO], None],
        what: str,
        durable: bool = True,
    ) -> None:
        write_atomic(path, content, what, durable=durable)
        self._wrote = True

    def _kept(self, write: Callable[[], None]) -> None:
        """Run ``write``; with ``keep_going``, a DataFileError is kept in ``error`` (and no
        later write is tried) instead of raised."""
        if self.error is not None:
            return
        try:
            write()
        except DataFileError as exc:
            message = str(exc) + self._after_failure()
            if not self.keep_going:
                raise DataFileError(message) from None
            self.error = message
            self._spool.close()  # nothing more is written: its temporary files go now

    def _after_failure(self) -> str:
        """After a failed write: the earlier campaign's files put back when this one wrote
        none yet; what became of them, to add to the error."""
        if not self._aside:
            return ""
        if self._wrote:
            return (
                "; the earlier campaign's files are kept in that folder as hidden "
                f"'.NAME.removed' files (e.g. {self._aside[0][1].name!r}) until a campaign "
                "saves its summary there"
            )
        unrestored = _put_back(self._aside)
        restored = self._restores_fallback
        self._aside, self._started, self._restores_fallback = [], False, False
        if unrestored:
            return (
                "; the earlier campaign's files were to be put back, but these could not "
                f"be: {', '.join(unrestored)}"
            )
        if restored:  # what an unfinished campaign had left in view went at the start
            return "; the files an earlier campaign had set aside there are back in view"
        return "; the earlier campaign's files there are left as they were"

    def _check_replaceable(self) -> None:
        """Refuse a folder holding files of the names this writer uses that no earlier
        campaign wrote (one did when its ``summary.json`` or, for a campaign that was
        killed before it finished, its MARKER is there): they would be replaced."""
        summary = self.directory / SUMMARY
        check_replaceable(summary, "pytest-rnncov-campaign", "campaign summary")
        try:  # a path too long for the system (ENAMETOOLONG) or a folder it cannot list
            if summary.exists() or (self.directory / MARKER).exists():
                return
            names = (
                sorted(p.name for p in self.directory.iterdir()) if self.directory.is_dir() else []
            )
        except OSError as exc:
            raise DataFileError(
                f"campaign output folder {str(self.directory)!r} cannot be used: "
                f"{exc.strerror or exc}; give a shorter or readable folder"
            ) from None
        for name in names:
            if name != SUMMARY and _written_here(name):
                raise DataFileError(
                    f"campaign output folder {str(self.directory)!r} holds {name!r} but no "
                    "summary.json of an earlier campaign: writing there would replace a file "
                    "pytest-rnncov did not write; give another folder, or move the file away"
                )

    @property
    def count(self) -> int:
        """The samples received: found so far, or after shrinking."""
        return self._spool.count if self._final is None else len(self._final)

    def _ready(self) -> Path:
        """The folder, created, marked and locked; at this writer's first file, an earlier
        campaign's files are set aside there (removed once this campaign's summary is
        written), so the folder never mixes two campaigns' samples (until then, an
        interrupted re-run leaves the earlier campaign's files whole)."""
        if self._started:
            return self.directory
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataFileError(f"cannot create {str(self.directory)!r}: {exc.strerror}") from None
        if self._lock is None:
            self._lock = _lock_folder(self.directory, self)
        hidden = sorted(p for p in self.directory.iterdir() if _set_aside_here(p.name))
        shown = sorted(p for p in self.directory.iterdir() if _written_here(p.name) and p.is_file())
        if hidden and not (self.directory / SUMMARY).exists():
            # an earlier campaign set these aside and did not finish (killed, a full disk):
            # they stay this campaign's fallback, and what that one left in view goes (all
            # or none: one that cannot go is named, not left to mix with this campaign's)
            _remove_all(shown)
            self._aside = [(p.with_name(_unhidden(p.name)), p) for p in hidden]
            self._restores_fallback = True
        else:  # so what is set aside is always one campaign's files, never a mix
            _discard([(p, p) for p in hidden])
            self._aside = _set_aside(shown)  # only our names: _check_replaceable saw them
        self._started = True
        return self.directory

    def _image(self, campaign: Campaign, index: int, sample: AdversarialSample) -> str | None:
        """Write sample ``index``'s PNG (2-D cases, the first MAX_IMAGES); returns its file
        name."""
        if index >= MAX_IMAGES:
            return None
        image, seed_image = np.squeeze(np.asarray(sample.case)), np.squeeze(np.asarray(sample.seed))
        if image.ndim != 2 or seed_image.shape != image.shape:
            return None
        if image.dtype.kind not in "biuf" or seed_image.dtype.kind not in "biuf":
            return None  # no picture of text or objects
        clip = getattr(campaign.mutator, "clip", None) or (
            float(min(image.min(), seed_image.min())),
            float(max(image.max(), seed_image.max())) + 1e-9,
        )
        name = _safe(
            f"{IMAGE_PREFIX}{index + 1:05d}_seed{sample.seed_index}_{sample.seed_decision}to"
            f"{sample.case_decision}.png"
        )
        self._write(
            self._ready() / name,
            png_bytes(side_by_side(seed_image, image, clip)),
            "an adversarial image",
            durable=False,  # up to 2 x MAX_IMAGES: fsync each cost 10-20x the write
        )
        return name

    def _text(self) -> None:
        header = b"# seed_index\tdistance\tseed_decision\tcase_decision\tseed\tcase\n"
        spool = self._spool

        def write(stream: BinaryIO) -> None:
            stream.write(header)
            spool.copy_lines(stream)

        self._write(self._ready() / TEXT, write, "the adversarial cases")
        self._in_text = spool.count

    def on_adversarial(self, campaign: Campaign, sample: AdversarialSample) -> None:
        self._for(campaign)
        index = self._spool.count
        self._kept(lambda: self._spool.add(sample))
        if campaign.mutator.array_cases:
            self._kept(lambda: self._first_image(campaign, index, sample))
        elif self._spool.count >= 2 * self._in_text:  # the samples doubled since
            self._kept(self._text)

    def _first_image(self, campaign: Campaign, index: int, sample: AdversarialSample) -> None:
        """The PNG of the sample just found, named in ``_names``."""
        if index < MAX_IMAGES:
            self._names.extend([None] * (index + 1 - len(self._names)))
            self._names[index] = self._image(campaign, index, sample)
            if index == self._png_ok:
                self._png_ok += 1

    def on_shrunk(self, campaign: Campaign, samples: Sequence[AdversarialSample]) -> None:
        self._for(campaign)
        self._final, self._final_shrunk, self._spooled_final = samples, True, False
        self._png_ok = 0  # every PNG shows a sample as found
        self._kept(lambda: self._catch_up(campaign))

    def _catch_up(self, campaign: Campaign) -> None:
        """Bring the files in line with ``_final``: its PNGs (those not written yet), its
        text; the spool holds it (its arrays are written at the end)."""
        assert self._final is not None
        if campaign.mutator.array_cases:
            self._render(campaign, self._final)
        self._spool_final()
        if not campaign.mutator.array_cases and self._in_text < self._spool.count:
            self._text()

    def _render(self, campaign: Campaign, samples: Sequence[AdversarialSample]) -> None:
        """The PNGs of ``samples`` from the first one not known to show it, a part at a
        time (a file whose name changed, the decision having moved, goes)."""
        stop = min(len(samples), MAX_IMAGES)
        self._names.extend([None] * (stop - len(self._names)))
        for start in range(self._png_ok, stop, SAMPLE_PART):
            for index, sample in enumerate(samples[start : min(start + SAMPLE_PART, stop)], start):
                name, old = self._image(campaign, index, sample), self._names[index]
                if old is not None and old != name:
                    _remove_all([self.directory / old])
                self._names[index] = name
                self._png_ok = index + 1

    def _spool_final(self) -> None:
        """Spool ``_final``: the shrunk samples in place of the found ones (once all are
        spooled: an interrupt while they are read keeps the found ones); the found ones
        that never reached this writer (an interrupt between the campaign and it) after
        the others."""
        final = self._final
        if final is None or self._spooled_final:
            return
        if self._final_shrunk:
            spool = _Spool(self._spool.arrays)
            try:
                for sample in final:
                    spool.add(sample)
                spool.flush()
            except BaseException:
                spool.close()
                raise
            old, self._spool, self._in_text = self._spool, spool, 0
            old.close()
        else:  # the samples as found: the ones received are the first ones
            for start in range(self._spool.count, len(final), SAMPLE_PART):
                for sample in final[start : start + SAMPLE_PART]:
                    self._spool.add(sample)
            self._spool.flush()
        self._spooled_final = True

    def on_finish(self, campaign: Campaign, result: CampaignResult) -> None:
        self._for(campaign)
        self.saved = False  # this campaign's files, not a reused writer's earlier ones
        try:
            self._kept(lambda: self._write_final(campaign, result))
        finally:
            self._spool.close()
            self._final = None  # the campaign's samples: not kept alive by the writer
            self._release()

    def _write_final(self, campaign: Campaign, result: CampaignResult) -> None:
        folder = self._ready()
        if self._final is None:  # not shrunk: the samples as the campaign keeps them
            self._final = getattr(campaign, "samples", None)
        if self._final is not None:
            self._catch_up(campaign)
        if not campaign.mutator.array_cases and self._in_text < self._spool.count:
            self._text()  # the samples found since it doubled last
        if campaign.mutator.array_cases and self._spool.count:
            self._write(folder / ARRAYS, self._spool.write_npz, "the adversarial samples")
        summary = {
            "format": "pytest-rnncov-campaign",
            **result.summary(campaign.name, saved_to=path_text(folder)).to_json(),
        }
        self._write(folder / SUMMARY, json.dumps(summary, indent=1) + "\n", "the summary")
        self.saved = True
        # the folder holds this campaign whole: what earlier ones left aside goes
        _discard([(p, p) for p in folder.iterdir() if _set_aside_here(p.name)])
        self._aside = []


class _Spool:
    """What a SampleWriter's files need of the samples it received, in unlinked temporary
    files: the arrays of adversarial.npz (a file each) or the lines of adversarial.txt.
    Samples are added to the files SAMPLE_PART at a time (one at a time cost a campaign
    that found many more than the writing)."""

    def __init__(self, arrays: bool) -> None:
        self.arrays = arrays
        #: the samples in the files
        self._written = 0
        #: whether a failed write could not be undone (the files hold part of a flush)
        self.broken = False
        self._pending: list[AdversarialSample] = []
        self._files: dict[str, IO[bytes]] = {}
        #: each array's dtype and the shape of one sample's part
        self._layout: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {}

    @property
    def count(self) -> int:
        """The samples added."""
        return self._written + len(self._pending)

    def add(self, sample: AdversarialSample) -> None:
        """Add ``sample``; every SAMPLE_PART samples, the added ones go to the files."""
        self._pending.append(sample)
        if len(self._pending) >= SAMPLE_PART:
            self.flush()

    def flush(self) -> None:
        """Write the samples added since the last flush into the temporary files, all or
        none: a flush that fails or is interrupted cuts the files back to their earlier
        end and keeps the samples pending. DataFileError when a sample's arrays differ in
        shape or kind from the first sample's, or a temporary file cannot be written."""
        part = self._pending
        if not part:
            return
        ends = {name: file.seek(0, os.SEEK_END) for name, file in self._files.items()}
        try:
            if self.arrays:
                for column, field in COLUMNS.items():
                    self._write_column(column, field, part, self.count - len(part) + 1)
            else:
                lines = "".join(map(_line, part))
                self._file("text").write(lines.encode("utf-8", "backslashreplace"))
            for file in self._files.values():
                file.flush()
        except BaseException as exc:
            self._roll_back(ends)
            if isinstance(exc, OSError):
                raise DataFileError(
                    f"cannot keep the adversarial samples in a temporary file: {exc.strerror}; "
                    "give the temporary folder room, or point TMPDIR at a folder that has it"
                ) from None
            raise
        self._written, self._pending = self._written + len(part), []

    def _roll_back(self, ends: dict[str, int]) -> None:
        """Cut every file back to its end in ``ends`` (a file made since: to nothing)."""
        for name, file in self._files.items():
            try:
                file.truncate(ends.get(name, 0))
                file.seek(0, os.SEEK_END)
            except OSError:  # the file cannot be trusted: it is dropped, and said so
                self.broken = True

    def _write_column(
        self, column: str, field: str, part: list[AdversarialSample], first: int
    ) -> None:
        values = [np.asarray(getattr(s, field)) for s in part]
        dtype, shape = self._layout.setdefault(column, (values[0].dtype, values[0].shape))
        if dtype.hasobject:  # their bytes would be the objects' addresses
            raise DataFileError(
                f"adversarial sample {first}'s {field} is an array of Python objects "
                f"({values[0].dtype}): adversarial.npz holds numbers; give the campaign "
                "cases of a numeric dtype, or a mutator whose cases are strings"
            )
        try:
            array = np.ascontiguousarray(np.stack(values), dtype)
            if array.shape[1:] != shape:
                raise ValueError
        except (TypeError, ValueError):  # which one: an error's path, a loop is fine
            other = next(
                (k for k, v in enumerate(values) if v.shape != shape or not _fits(v, dtype)), 0
            )
            raise DataFileError(
                f"adversarial sample {first + other}'s {field} is {values[other].dtype}"
                f"{list(values[other].shape)}, the first sample's {dtype}{list(shape)}: one "
                "campaign's samples are of one shape and kind; save others with another "
                "SampleWriter"
            ) from None
        self._file(column).write(array.tobytes())

    def _file(self, name: str) -> IO[bytes]:
        if name not in self._files:
            self._files[name] = tempfile.TemporaryFile(prefix="rnncov-samples-")
        return self._files[name]

    def copy_lines(self, stream: BinaryIO) -> None:
        """Copy the lines of text into ``stream``."""
        self.flush()
        self._check()
        if "text" in self._files:
            _copy(self._files["text"], stream)

    def write_npz(self, stream: BinaryIO) -> None:
        """Write adversarial.npz into ``stream``: what ``np.savez_compressed`` writes for
        the arrays, written an array at a time from the temporary files."""
        self.flush()
        self._check()
        archive = zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED)
        try:
            for column in COLUMNS:
                dtype, shape = self._layout[column]
                header = {
                    "descr": np.lib.format.dtype_to_descr(dtype),
                    "fortran_order": False,
                    "shape": (self.count, *shape),
                }
                with archive.open(f"{column}.npy", "w", force_zip64=True) as entry:
                    np.lib.format.write_array_header_1_0(entry, header)
                    _copy(self._files[column], entry)
        except BaseException:
            # the temporary file is discarded: nothing to finish, and closing an archive an
            # interrupt left an entry open in raises over the interrupt (and again when the
            # archive is collected)
            archive.fp = None
            raise
        archive.close()

    def _check(self) -> None:
        if self.broken:
            raise DataFileError(
                "the adversarial samples kept in a temporary file were cut short by a "
                "write that failed and could not be undone; give the temporary folder "
                "room, or point TMPDIR at a folder that has it, and run the campaign again"
            )

    def close(self) -> None:
        """Release the temporary files (their samples are gone)."""
        files, self._files, self._pending = self._files, {}, []
        for file in files.values():
            file.close()


def _copy(source: IO[bytes], stream: Any) -> None:
    """Copy all of the temporary file ``source`` into ``stream`` (whose position is back
    at its end afterwards, even after an interrupt: the next flush appends)."""
    source.flush()
    source.seek(0)
    try:
        shutil.copyfileobj(source, stream, COPY_BYTES)
    finally:
        source.seek(0, os.SEEK_END)


def _fits(value: np.ndarray, dtype: np.dtype[Any]) -> bool:
    """Whether ``value`` converts to ``dtype``."""
    try:
        np.asarray(value, dtype)
    except (TypeError, ValueError):
        return False
    return True


def _line(sample: AdversarialSample) -> str:
    """``sample``'s line of adversarial.txt."""
    s = sample
    return (
        f"{s.seed_index}\t{s.distance:.4g}\t{_field(s.seed_decision)}\t"
        f"{_field(s.case_decision)}\t{_field(s.seed)}\t{_field(s.case)}\n"
    )


def _field(value: Any) -> str:
    """``value`` as one column of ``adversarial.txt``: a backslash doubled, then tabs, line
    breaks and other control or invisible characters escaped as Python writes them
    (``\\x09``): every sample is one line of six columns, and a column's text is never
    ambiguous (a ``\\`` not doubled starts an escape)."""
    return printable(str(value).replace("\\", "\\\\"))


def _lock_folder(folder: Path, owner: object) -> Callable[[], None]:
    """Take the lock on ``folder``'s MARKER file (created if missing), without waiting;
    returns what releases it (``owner`` going away releases it too). DataFileError when
    another writer holds it. No lock where the platform or the file system has none (the
    writes stay atomic)."""
    handle = _open_marker(folder / MARKER)
    release = weakref.finalize(owner, _unlock, handle)
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks
        return release
    for attempt in range(2):
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return release
        except BlockingIOError:
            # a campaign of this process left unfinished (its loop raised) holds it until
            # the garbage collector frees its writer: collect once, then try again
            gc.collect()
        except OSError:  # a file system without locks (some network mounts)
            return release
    release()
    raise DataFileError(
        f"campaign output folder {str(folder)!r} is in use: another campaign (in this "
        "process or another) is saving its samples there; give each campaign its own "
        "folder, or finish() the other first"
    )


def _open_marker(marker: Path) -> int:
    """The MARKER file opened (created, with its line, if missing); read-only where it
    may not be written (a lock needs no more)."""
    try:
        handle = os.open(marker, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        try:
            return os.open(marker, os.O_RDONLY)
        except OSError:
            raise DataFileError(f"cannot write {str(marker)!r}: {exc.strerror}") from None
    try:
        if os.fstat(handle).st_size == 0:
            os.write(handle, b"written by pytest-rnncov: campaign samples\n")
    except OSError as exc:
        os.close(handle)
        raise DataFileError(f"cannot write {str(marker)!r}: {exc.strerror}") from None
    return handle


def _unlock(handle: int) -> None:
    """Release the lock and close: unlocked first, as a forked child shares the lock."""
    with contextlib.suppress(ImportError, OSError):
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_UN)
    os.close(handle)


def _discard(aside: list[tuple[Path, Path]]) -> None:
    """Remove the files set aside."""
    for _, renamed in aside:
        with contextlib.suppress(OSError):  # a leftover is hidden, and replaced next time
            renamed.unlink(missing_ok=True)


def _put_back(aside: list[tuple[Path, Path]]) -> list[str]:
    """Rename the files set aside back; the ones that could not be. The summary goes back
    last, and only when every other file did: a folder whose summary is in view counts
    as finished, and the next campaign would remove the files still set aside."""
    unrestored: list[str] = []
    for original, renamed in sorted(reversed(aside), key=lambda pair: pair[0].name == SUMMARY):
        if original.name == SUMMARY and unrestored:
            unrestored.append(f"{renamed.name} (was {original.name}, kept aside with them)")
            continue
        try:
            os.replace(renamed, original)
        except OSError:
            unrestored.append(f"{renamed.name} (was {original.name})")
    return unrestored


def _remove_all(paths: list[Path]) -> None:
    """Remove ``paths`` all or none (``_set_aside`` under another suffix, then gone): a
    file that cannot go is named, and none of the hidden ``.NAME.removed`` files an
    earlier campaign set aside is touched."""
    _discard(_set_aside(paths, ".discarded"))


def _set_aside(paths: list[Path], suffix: str = ASIDE) -> list[tuple[Path, Path]]:
    """Rename ``paths`` (an earlier campaign's files) aside as ``.NAME<suffix>``, all or
    none: if one cannot be (immutable, or open in another program on Windows) those
    already moved are put back and DataFileError names it, so the earlier campaign stays
    whole. Returns (original, renamed) pairs."""
    moved: list[tuple[Path, Path]] = []
    for path in paths:
        aside = path.with_name(f".{path.name}{suffix}")
        with contextlib.suppress(OSError):  # a leftover of a run that could not remove it
            aside.unlink(missing_ok=True)
        try:
            os.replace(path, aside)
        except FileNotFoundError:
            continue
        except OSError as exc:
            unrestored = _put_back(moved)
            kept = f"; these could not be put back: {', '.join(unrestored)}" if unrestored else ""
            raise DataFileError(
                f"cannot replace {str(path)!r}, a file an earlier campaign wrote there: "
                f"{exc.strerror}; make it writable (or close the program holding it), "
                f"or give the campaign another folder{kept}"
            ) from None
        moved.append((path, aside))
    return moved


def _set_aside_here(name: str) -> bool:
    """Whether ``name`` is one of the files a SampleWriter writes, set aside."""
    return name.startswith(".") and name.endswith(ASIDE) and _written_here(_unhidden(name))


def _unhidden(name: str) -> str:
    """The name of the file that ``.NAME.removed`` set aside."""
    return name[1 : -len(ASIDE)]


def _written_here(name: str) -> bool:
    """Whether ``name`` is one of the files a SampleWriter writes."""
    return name in (SUMMARY, ARRAYS, TEXT) or (
        name.startswith(IMAGE_PREFIX) and name.endswith(".png")
    )


def _safe(name: str) -> str:
    """A file name without path separators (decisions are model output text)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


#: the longest folder name ``samples_folder`` makes, in UTF-8 bytes (file systems allow 255),
#: before a ``-2``, ``-3``... for further campaigns of one test
FOLDER_BYTES = 120
#: names Windows gives to devices, in any case and with any extension (``nul.txt``); the
#: superscript digits count too (``COM¹``)
WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL"]
    + [f"{d}{i}" for d in ("COM", "LPT") for i in [*range(1, 10), "\u00b9", "\u00b2", "\u00b3"]]
)


def _folder_name(text: str, fallback: str) -> str:
    """``text`` made one folder name: no separators, no leading or trailing dots (``..``
    would climb out of the folder), none of Windows' device names, at most FOLDER_BYTES in
    UTF-8. A name that changed in the making ends in a hash of ``text``, so two texts never
    share a folder (``a/b`` and ``a_b``: pytest-xdist workers cannot see each other's)."""
    name = _safe(text).strip(".") or fallback
    if name.split(".")[0].upper() in WINDOWS_DEVICES:
        name = f"_{name}"
    if name == text and len(name.encode()) <= FOLDER_BYTES:
        return name
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    head = name.encode()[: FOLDER_BYTES - len(digest) - 1].decode(errors="ignore")
    return f"{head.rstrip('.')}-{digest}"


def samples_folder(root: Path, model: str, test: str | None, taken: set[Path]) -> Path:
    """Where a campaign saves its samples under ``--rnn-samples`` ``root``:
    ``root/<model>/<test>`` (model name and node id made folder names, ``_folder_name``),
    with ``-2``, ``-3``... for further campaigns of the same test; ``taken`` holds the
    folders this session gave out already."""
    base = root / _folder_name(model, "model") / _folder_name(test or "session", "session")
    folder, n = base, 1
    while folder in taken:
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    taken.add(folder)
    return folder
