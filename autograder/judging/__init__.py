"""The judge: test cells run in their own kernel and reach the learner's work only as data.

Mounted read-only into both grading kernels as the package ``ctxlab_judging``:

* :mod:`.wire`: the channel (JSON over a Unix socket) and how values are encoded;
* :mod:`.endpoint`: the requests each side answers, and proxies for the other side's objects;
* :mod:`.errors`: exceptions re-raised on the receiving side as its own classes, by name;
* :mod:`.agent`: runs in the learner's kernel and answers the judge (trusted by nothing);
* :mod:`.judge`: runs in the judge's kernel and binds the learner's names before each test.

Standard library only (ctxlab is imported where it is used), so both kernels import it fast.
"""
