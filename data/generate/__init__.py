"""The generator of the course's transcripts, one module per transcript.

``common`` holds what every transcript is made with (messages, laps, time stamps, ids);
each other module writes one run, its story by hand and its bulk from a seeded
``random.Random``, in its ``build_<name>()``. ``data/make_transcripts.py`` writes them out.
"""
