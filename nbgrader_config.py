"""nbgrader configuration: the repository root is the course root.

solutions/NN-name/name.ipynb (instructor source, with solutions and hidden tests)
  --nbgrader generate_assignment-->  course/NN-name/name.ipynb (what learners get).
`make release` regenerates course/ from solutions/; never edit course/ by hand.
"""

c = get_config()  # noqa: F821  (nbgrader provides get_config)

c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "course"
c.CourseDirectory.db_url = "sqlite:///gradebook.db"

# Learners see this where a solution was.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Outputs are never shipped: solutions are committed without outputs, and so is course/.
c.ClearOutput.enabled = True

# A test cell a learner deleted is put back when grading, rather than the notebook being
# flagged for manual grading with a silently lower score.
c.OverwriteCells.add_missing_cells = True

# Per-cell time limit when grading or validating (seconds).
c.Execute.timeout = 60
