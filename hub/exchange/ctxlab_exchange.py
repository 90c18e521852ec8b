"""nbgrader's folder exchange, trusting only what a learner cannot forge: ``Collect`` and ``Submit``.

Learners write into the exchange's ``inbound/`` folder, and nbgrader's own collect trusts what
they wrote there. The learner a submission counts for, and its time, come from the folder's
name, which whoever made the folder chose: nbgrader only warns when the folder's owner is
someone else, then takes the latest time any folder names. And it copies what the folder
holds with the instructor's rights, following symbolic links. So a learner could submit in
another's name, date a submission before the deadline, or submit a link to a file only the
instructor may read (a solution notebook) and have it graded as their work.

``Collect`` refuses a submission folder that

* belongs to anyone but the learner its name gives;
* holds a symbolic link, or anything but folders and plain files;
* is larger than ``CourseDirectory.max_dir_size`` (nbgrader would stop the whole collect at it),

and reports each in its log and in ``refused-submissions.jsonl`` in the course root. It dates
a submission by the latest inode change time of its folder and files: the owner can move that
later (any change does) but never earlier, and no name or ``timestamp.txt`` they write counts.
The collected ``timestamp.txt`` holds that time.

``Submit`` leaves the learner's folder writable by its owner only (nbgrader makes it ``0o777``,
so that anyone who learns its name may change it).

``hub/exchange/nbgrader_config.py`` puts both in place of nbgrader's for the folder exchange;
with ngshare the service knows the learner from their token and dates submissions itself.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import pwd
import shutil
import stat

from nbgrader.exchange.default.collect import ExchangeCollect, groupby
from nbgrader.exchange.default.submit import ExchangeSubmit
from nbgrader.utils import check_mode, ignore_patterns

__all__ = ["Collect", "Submit", "REFUSED_LOG", "problem_with"]

REFUSED_LOG = "refused-submissions.jsonl"


def _inspect(folder: str) -> tuple[int, float, list[str]]:
    """The bytes of the plain files under ``folder``, its latest inode change time, and what in
    it is neither a folder nor a plain file (nothing is followed)."""
    size, latest, odd = 0, os.lstat(folder).st_ctime, []
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            latest = max(latest, info.st_ctime)
            if stat.S_ISREG(info.st_mode):
                size += info.st_size
            elif not stat.S_ISDIR(info.st_mode):
                odd.append(os.path.relpath(path, folder))
        folders[:] = [name for name in folders if not os.path.islink(os.path.join(parent, name))]
    return size, latest, odd


def problem_with(folder: str, learner: str, max_bytes: int) -> str | None:
    """Why the submission ``folder``, named for ``learner``, cannot be collected; ``None`` if it can.

    >>> import tempfile
    >>> me = pwd.getpwuid(os.getuid()).pw_name
    >>> problem_with(tempfile.mkdtemp(), me, 1000) is None
    True
    >>> problem_with(tempfile.mkdtemp(), "no-such-learner-x", 1000)
    'it is named for no-such-learner-x, who is not a user of this machine'
    """
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a folder"
    try:
        expected = pwd.getpwnam(learner).pw_uid
    except KeyError:
        return f"it is named for {learner}, who is not a user of this machine"
    if info.st_uid != expected:
        try:
            owner = pwd.getpwuid(info.st_uid).pw_name
        except KeyError:
            owner = f"user id {info.st_uid}"
        return f"it is named for {learner} but belongs to {owner}: a submission in another's name"
    size, _, odd = _inspect(folder)
    if odd:
        return f"it holds what is neither a folder nor a plain file (a symbolic link?): {', '.join(sorted(odd)[:5])}"
    if size > max_bytes:
        return f"it holds {size:,} bytes, over the limit of {max_bytes:,} (CourseDirectory.max_dir_size)"
    return None


class Collect(ExchangeCollect):
    """nbgrader's collect, on submissions checked by :func:`problem_with` and dated by the file system."""

    def _refuse(self, path: str, learner: str, problem: str) -> None:
        self.log.error("refused the submission %s: %s. It was not collected; see %s in the course root",
                       path, problem, REFUSED_LOG)
        record = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "lesson": self.coursedir.assignment_id, "named": learner, "folder": path, "problem": problem}
        with open(os.path.join(self.coursedir.root, REFUSED_LOG), "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        if not check_mode(self.inbound_path, read=True, execute=True):  # as nbgrader's collect checks
            self.fail(f"You don't have read permissions for the directory: {self.inbound_path}")
        student_id = self.coursedir.student_id if self.coursedir.student_id else "*"
        pattern = os.path.join(self.inbound_path, f"{student_id}+{self.coursedir.assignment_id}+*")
        records = []
        for path in sorted(glob.glob(pattern)):
            record = self._path_to_record(path)
            problem = problem_with(path, record["username"], 1000 * self.coursedir.max_dir_size)
            if problem:
                self._refuse(path, record["username"], problem)
                continue
            record["timestamp"] = datetime.datetime.fromtimestamp(
                _inspect(path)[1], datetime.timezone.utc).replace(tzinfo=None)  # naive UTC, as nbgrader's
            records.append(record)
        self.duedate = self._duedate()
        latest_first = {learner: self._sort_by_timestamp(mine) for learner, mine in
                        groupby(records, lambda item: item["username"]).items()}
        if self.duedate is None or not self.before_duedate:
            self.src_records = [mine[0] for mine in latest_first.values()]
        else:
            self.src_records = [next((r for r in mine if r["timestamp"] <= self.duedate), mine[0])
                                for mine in latest_first.values()]
        self._times = {record["filename"]: record["timestamp"] for record in self.src_records}

    def _duedate(self):
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gradebook:
            try:
                return gradebook.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                return None

    def do_copy(self, src, dest, log=None):
        """nbgrader's copy, but a symbolic link is copied as a link, never followed, and then
        refused: one made after the check above must not bring in a file the learner may not read."""
        shutil.copytree(src, dest, symlinks=True, ignore=ignore_patterns(
            exclude=self.coursedir.ignore, include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size, log=self.log))
        _, _, odd = _inspect(dest)
        if odd:
            shutil.rmtree(dest)
            self._refuse(src, self._path_to_record(src)["username"],
                         f"it came to hold what is neither a folder nor a plain file while it was collected: {odd[:5]}")
            return
        if self.coursedir.groupshared:  # as nbgrader's copy: the other instructors may change it
            for parent, _, files in os.walk(dest):
                os.chmod(parent, (os.stat(parent).st_mode | 0o2770) & 0o2777)
                for name in files:
                    path = os.path.join(parent, name)
                    os.chmod(path, (os.stat(path).st_mode | 0o660) & 0o777)
        when = self._times.get(os.path.basename(src))
        if when is not None:  # the file system's time, not the one the learner wrote
            with open(os.path.join(dest, "timestamp.txt"), "w", encoding="utf-8") as handle:
                handle.write(f"{when:%Y-%m-%d %H:%M:%S.%f} UTC")


class Submit(ExchangeSubmit):
    """nbgrader's submit, leaving the submission's folder writable by the learner alone."""

    def copy_files(self):
        super().copy_files()
        folder = os.path.join(self.inbound_path, self.assignment_filename)
        if os.path.isdir(folder):
            os.chmod(folder, 0o755)
