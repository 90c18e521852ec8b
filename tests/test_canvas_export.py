"""Reading an instructor's Canvas gradebook export and finding the graded students in it.

The exports below follow the format Canvas documents for its gradebook CSV and shows in the
files it exports: "How do I export grades in the Gradebook?"
(https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-export-grades-in-the-Gradebook/ta-p/809)
and "How do I import grades in the Gradebook?"
(https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807):
identity columns, one ``Title (assignment id)`` column per assignment, read-only computed columns,
a ``Points Possible`` row whose first cell is padded, and one row per student, the Test Student
included. An export made by someone without permission to see SIS data has no SIS columns.
"""

from __future__ import annotations

import pytest

from autograder.canvas import CanvasError, match_students, read_export

EXPORT = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Lesson 01 · Budget (4101),Quiz (part 2) (4102),"
    "Assignments Current Score,Assignments Final Score,Current Score,Unposted Current Score,Final Score\n"
    "    Points Possible,,,,,100.00,10.00,(read only),(read only),(read only),(read only),(read only)\n"
    '"Doe, Ana",81001,S-1001,ana,Section A,72.50,,72.50,72.50,72.50,72.50,72.50\n'
    '"Lee, Bo",81002,S-1002,-bob,Section A,,8.00,80.00,8.00,80.00,80.00,8.00\n'
    '"Ng, Cy",81003,S-1003,@cy,Section B,,,,,,,\n'
    '"Ortiz, Di",81004,S-1004,+di,Section B,,,,,,,\n'
    '"Park, Ed",81005,S-1005,=ed,Section B,,,,,,,\n'
    '"Student, Test",81099,,c0ffee0123456789,Section A,,,,,,,\n'
)


def test_the_columns_and_the_points_possible_row_are_read():
    export = read_export(EXPORT)
    assert [(a.title, a.canvas_id, a.column, a.points) for a in export.assignments] == [
        ("Lesson 01 · Budget", "4101", 5, 100.0), ("Quiz (part 2)", "4102", 6, 10.0)]
    assert export.read_only == ["Assignments Current Score", "Assignments Final Score", "Current Score",
                                "Unposted Current Score", "Final Score"]
    assert export.id_columns == ["ID", "SIS User ID", "SIS Login ID"]
    assert [s.name for s in export.students] == ["Doe, Ana", "Lee, Bo", "Ng, Cy", "Ortiz, Di", "Park, Ed",
                                                 "Student, Test"]
    assert export.students[0].ids == {"ID": "81001", "SIS User ID": "S-1001", "SIS Login ID": "ana"}
    assert export.students[0].row == 2 and export.students[0].section == "Section A"


def test_every_cell_is_kept_as_exported():
    """Reading changes nothing: the rows are the file's, cell for cell, ids starting with
    -, +, @ or = included (no formula guard is applied to what Canvas wrote)."""
    export = read_export("\ufeff" + EXPORT)
    import csv
    import io

    assert export.rows == list(csv.reader(io.StringIO(EXPORT)))
    assert [s.ids["SIS Login ID"] for s in export.students][1:5] == ["-bob", "@cy", "+di", "=ed"]


def test_the_graded_students_are_found_by_the_column_that_holds_them():
    export = read_export(EXPORT)
    match = match_students(export, ["ana", "-bob", "@cy", "+di", "=ed"])
    assert match.column == "SIS Login ID"
    assert {sid: row.name for sid, row in match.rows.items()} == {
        "ana": "Doe, Ana", "-bob": "Lee, Bo", "@cy": "Ng, Cy", "+di": "Ortiz, Di", "=ed": "Park, Ed"}
    assert match.missing == [] and [row.name for row in match.ungraded] == ["Student, Test"]
    by_sis = match_students(export, ["S-1001", "S-1003"])
    assert by_sis.column == "SIS User ID" and sorted(by_sis.rows) == ["S-1001", "S-1003"]


def test_an_id_matches_only_as_written():
    """An id is compared exactly: a quoted "'-bob" (how a spreadsheet's formula guard writes it)
    or another case is not the student; spaces around a cell are ignored."""
    export = read_export(EXPORT.replace(",ana,", ", ana ,"))
    match = match_students(export, ["ana", "'-bob", "ANA"], column="SIS Login ID")
    assert sorted(match.rows) == ["ana"] and match.missing == ["'-bob", "ANA"]


def test_a_graded_student_missing_from_the_export_and_a_student_not_graded_are_reported():
    export = read_export(EXPORT)
    match = match_students(export, ["ana", "zed"])
    assert sorted(match.rows) == ["ana"]
    assert match.missing == ["zed"]
    assert [row.name for row in match.ungraded] == ["Lee, Bo", "Ng, Cy", "Ortiz, Di", "Park, Ed", "Student, Test"]


def test_no_column_holding_the_graded_students_is_an_error_that_says_what_is_there():
    with pytest.raises(CanvasError, match=r"none of the 2 graded students \('Ana Doe', 'Bo Lee'\).*SIS Login ID: 'ana'"):
        match_students(read_export(EXPORT), ["Ana Doe", "Bo Lee"])
    with pytest.raises(CanvasError, match="no column 'Integration ID'.*ID, SIS User ID, SIS Login ID"):
        match_students(read_export(EXPORT), ["ana"], column="Integration ID")


def test_an_id_in_two_rows_is_refused():
    twice = EXPORT.replace(",c0ffee0123456789,", ",ana,")
    with pytest.raises(CanvasError, match=r"'ana' is in 2 rows .*rows 3, 8 of the file"):
        match_students(read_export(twice), ["ana"])


def test_an_export_without_sis_columns_is_matched_by_canvas_id():
    """A TA's export, made without permission to see SIS data, has only Student, ID and Section."""
    ta = ("Student,ID,Section,Lesson 01 · Budget (4101)\n"
          "    Points Possible,,,100.00\n"
          '"Doe, Ana",81001,Section A,\n')
    export = read_export(ta)
    assert export.id_columns == ["ID"]
    assert match_students(export, ["81001"]).rows["81001"].name == "Doe, Ana"


def test_a_manual_posting_row_is_not_a_student():
    posting = EXPORT.replace("(read only)\n", "(read only)\n,,,,,Manual Posting,,,,,,\n", 1)
    export = read_export(posting)
    assert [s.name for s in export.students][0] == "Doe, Ana" and len(export.students) == 6


def test_files_that_are_not_gradebook_exports_are_refused_with_what_to_do():
    with pytest.raises(CanvasError, match="Export Entire Gradebook"):
        read_export("student,lesson,score\nana,01-budget,7\n")
    with pytest.raises(CanvasError, match="no assignment column"):
        read_export("Student,ID,Section,Current Score\n    Points Possible,,,(read only)\n")
    with pytest.raises(CanvasError, match="none of the columns Canvas matches students by"):
        read_export("Student,Section,Budget (1)\n")
    with pytest.raises(CanvasError, match="Export Entire Gradebook"):
        read_export("")


# Filling in the export: lessons mapped to its columns, scores scaled, nothing else touched.

from autograder.canvas import fill_in, map_lessons, write_export  # noqa: E402


def _result(score, most, status="graded"):
    return {"score": score, "max_score": most, "status": status}


def test_lessons_go_into_the_columns_they_are_mapped_to():
    export = read_export(EXPORT)
    assert map_lessons(export, ["01-budget"], {"01-budget": "4101"})["01-budget"].title == "Lesson 01 · Budget"
    assert map_lessons(export, ["01-budget"], {"01-budget": "Quiz (part 2) (4102)"})["01-budget"].canvas_id == "4102"
    assert map_lessons(export, ["01-budget"], {"01-budget": "Quiz (part 2)"})["01-budget"].canvas_id == "4102"
    named = EXPORT.replace("Lesson 01 · Budget (4101)", "01-budget (4101)")
    assert map_lessons(read_export(named), ["01-budget"])["01-budget"].canvas_id == "4101"


def test_a_lesson_without_a_column_is_an_error_that_lists_the_columns():
    export = read_export(EXPORT)
    with pytest.raises(CanvasError, match=r"lesson 01-budget has no column.*Lesson 01 · Budget \(4101\); Quiz \(part 2\) \(4102\)"):
        map_lessons(export, ["01-budget"])
    with pytest.raises(CanvasError, match="names no column"):
        map_lessons(export, ["01-budget"], {"01-budget": "9999"})
    with pytest.raises(CanvasError, match="each lesson needs a column of its own"):
        map_lessons(export, ["01-budget", "02-trimming"], {"01-budget": "4101", "02-trimming": "4101"})
    with pytest.raises(CanvasError, match="not graded: 03-summarising"):
        map_lessons(export, ["01-budget"], {"01-budget": "4101", "03-summarising": "4102"})
    renamed = EXPORT.replace("Quiz (part 2) (4102)", "Lesson 01 · Budget (4102)")
    with pytest.raises(CanvasError, match="give the assignment id"):
        map_lessons(read_export(renamed), ["01-budget"], {"01-budget": "Lesson 01 · Budget"})


def test_scores_are_scaled_and_only_graded_cells_change():
    """7.5 of 17 into a 100-point assignment is 44.12; a failed grading (error) leaves Ana's 72.50
    as exported; Bo's missing notebook is 0; a student not graded and the Test Student keep their
    rows; the computed columns are never written."""
    export = read_export(EXPORT)
    match = match_students(export, ["ana", "-bob", "@cy", "zed"])
    columns = map_lessons(export, ["01-budget", "02-trimming"], {"01-budget": "4101", "02-trimming": "4102"})
    results = {
        "ana": {"lessons": {"01-budget": _result(0.0, 17.0, "error"), "02-trimming": _result(46.0, 46.0)}},
        "-bob": {"lessons": {"01-budget": _result(0.0, 17.0, "missing"), "02-trimming": _result(23.0, 46.0)}},
        "@cy": {"lessons": {"01-budget": _result(7.5, 17.0)}},
        "zed": {"lessons": {"01-budget": _result(17.0, 17.0)}},
    }
    rows, changes = fill_in(export, match, results, columns)
    written = {(c.student, c.assignment): (c.before, c.after, c.kind) for c in changes}
    assert written == {
        ("ana", "Lesson 01 · Budget (4101)"): ("72.50", "72.50", "failed"),
        ("ana", "Quiz (part 2) (4102)"): ("", "10.00", "new"),
        ("-bob", "Lesson 01 · Budget (4101)"): ("", "0.00", "new"),
        ("-bob", "Quiz (part 2) (4102)"): ("8.00", "5.00", "lowered"),
        ("@cy", "Lesson 01 · Budget (4101)"): ("", "44.12", "new"),
    }
    changed = {(export.students[i].row, col) for i, col in ((0, 6), (1, 5), (1, 6), (2, 5))}
    for r, (old, new) in enumerate(zip(export.rows, rows, strict=True)):
        for c, (a, b) in enumerate(zip(old, new, strict=True)):
            assert a == b or (r, c) in changed, f"row {r} column {c} changed from {a!r} to {b!r}"
    assert rows[2][5] == "72.50"  # Ana's grade survives her failed regrade


def test_a_grade_raised_lowered_or_kept_is_told_apart():
    export = read_export(EXPORT)
    match = match_students(export, ["ana"])
    columns = map_lessons(export, ["01-budget"], {"01-budget": "4101"})
    for score, kind in ((17.0, "raised"), (1.0, "lowered"), (12.325, "same")):
        _, (change,) = fill_in(export, match, {"ana": {"lessons": {"01-budget": _result(score, 17.0)}}}, columns)
        assert change.kind == kind, (score, change)


def test_an_assignment_without_points_possible_is_refused():
    export = read_export(EXPORT.replace("100.00,10.00", ",10.00"))
    columns = map_lessons(export, ["01-budget"], {"01-budget": "4101"})
    with pytest.raises(CanvasError, match="gives no points for Lesson 01 · Budget"):
        fill_in(export, match_students(export, ["ana"]), {}, columns)


def test_the_filled_in_export_reads_back_as_written():
    export = read_export(EXPORT)
    columns = map_lessons(export, ["01-budget"], {"01-budget": "4101"})
    rows, _ = fill_in(export, match_students(export, ["=ed"]), {"=ed": {"lessons": {"01-budget": _result(17.0, 17.0)}}}, columns)
    text = write_export(rows)
    again = read_export(text)
    assert again.rows == rows
    assert [s.ids["SIS Login ID"] for s in again.students][1:5] == ["-bob", "@cy", "+di", "=ed"]
    assert "'" not in text


# The command: python -m autograder canvas EXPORT --results DIR --map LESSON=ASSIGNMENT


def test_the_command_fills_in_the_export_from_the_graders_results(tmp_path, capsys):
    """As an instructor runs it after `grade`: grades.csv (with its guarded '-bob) in, a filled-in
    copy of the export out, the export itself untouched, and a summary of every change."""
    from autograder.__main__ import main
    from autograder.report import grades_csv

    results = tmp_path / "grading-output"
    results.mkdir()
    (results / "grades.csv").write_text(grades_csv({
        "ana": {"lessons": {"01-budget": {**_result(17.0, 17.0), "notes": [], "events": []}}},
        "-bob": {"lessons": {"01-budget": {**_result(0.0, 17.0, "error"), "notes": ["kernel died"], "events": []}}},
        "zed": {"lessons": {"01-budget": {**_result(8.5, 17.0), "notes": [], "events": []}}},
    }), encoding="utf-8")
    assert "'-bob" in (results / "grades.csv").read_text(encoding="utf-8")
    export = tmp_path / "gradebook.csv"
    export.write_text("\ufeff" + EXPORT.replace('"Lee, Bo",81002,S-1002,-bob,Section A,,', '"Lee, Bo",81002,S-1002,-bob,Section A,64.00,'),
                      encoding="utf-8")
    before = export.read_bytes()
    assert main(["canvas", str(export), "--results", str(results), "--map", "01-budget=4101"]) == 0
    said = capsys.readouterr().out
    assert export.read_bytes() == before
    filled = read_export((results / "canvas-import.csv").read_text(encoding="utf-8"))
    assert filled.rows[2][5] == "100.00" and filled.rows[3][5] == "64.00"  # Bo's grade survives his error
    assert "students: 2 matched by SIS Login ID" in said
    assert "grades: 0 new, 1 raised, 0 lowered, 0 unchanged" in said
    assert "not in the export, so not written: zed" in said
    assert "01-budget -> Lesson 01 · Budget (4101, 100 points)" in said


def test_the_command_says_what_is_wrong(tmp_path, capsys):
    from autograder.__main__ import main

    export = tmp_path / "gradebook.csv"
    export.write_text(EXPORT, encoding="utf-8")
    assert main(["canvas", str(export), "--results", str(tmp_path / "nowhere")]) == 2
    assert "grade the class first" in capsys.readouterr().err
    (tmp_path / "grades.csv").write_text("student,lesson,score,max_score,status,attention,notes\n"
                                         "ana,01-budget,7,17,graded,no,\n", encoding="utf-8")
    assert main(["canvas", str(export), "--results", str(tmp_path)]) == 2
    assert "lesson 01-budget has no column" in capsys.readouterr().err
    assert main(["canvas", str(export), "--results", str(tmp_path), "--map", "01-budget"]) == 2
    assert "--map takes LESSON=ASSIGNMENT" in capsys.readouterr().err
    assert not (tmp_path / "canvas-import.csv").exists()


def test_make_canvas_runs_the_command_the_readme_shows(tmp_path):
    """The README's `make canvas EXPORT=... MAP="..."` line, as make expands it."""
    import subprocess

    from support.pipeline import REPO

    dry = subprocess.run(["make", "-n", "canvas", "EXPORT=gradebook.csv", "MAP=01-budget=4101 02-trimming=4102"],
                         cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    (command,) = [line for line in dry.splitlines() if " -m autograder canvas " in line]  # make may add notes
    assert command.endswith('-m autograder canvas "gradebook.csv" --results grading-output '
                            "--map 01-budget=4101 --map 02-trimming=4102"), command
    spaced = subprocess.run(["make", "-n", "canvas", "EXPORT=CS 101 gradebook.csv", "MAP=01-budget=4101"],
                            cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    assert '-m autograder canvas "CS 101 gradebook.csv" --results' in spaced, "a name with spaces stays one argument"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert 'make canvas EXPORT=gradebook.csv MAP="01-budget=4101 02-trimming=4102"' in readme


def test_a_renamed_assignment_keeps_its_id():
    """An assignment renamed in Canvas after the mapping was written is still found by its id; a
    mapping by its old title is an error that lists the columns as they are now."""
    renamed = read_export(EXPORT.replace("Lesson 01 · Budget (4101)", "\"Budget, revised (4101)\""))
    assert map_lessons(renamed, ["01-budget"], {"01-budget": "4101"})["01-budget"].title == "Budget, revised"
    with pytest.raises(CanvasError, match=r"names no column.*Budget, revised \(4101\)"):
        map_lessons(renamed, ["01-budget"], {"01-budget": "Lesson 01 · Budget"})


# Never change a cell the grading did not decide; refuse a file Canvas would refuse.


def test_an_excused_or_not_applicable_cell_is_kept_unless_asked():
    """Canvas exports an excused learner's cell as EX; a number written over it ends the excusal on
    import. So EX and N/A stay, even for a learner with no notebook, and are counted apart."""
    export = read_export(EXPORT.replace('"Doe, Ana",81001,S-1001,ana,Section A,72.50', '"Doe, Ana",81001,S-1001,ana,Section A,EX')
                         .replace('"Ng, Cy",81003,S-1003,@cy,Section B,,', '"Ng, Cy",81003,S-1003,@cy,Section B,n/a,'))
    match = match_students(export, ["ana", "@cy"])
    columns = map_lessons(export, ["01-budget"], {"01-budget": "4101"})
    results = {"ana": {"lessons": {"01-budget": _result(0.0, 17.0, "missing")}},
               "@cy": {"lessons": {"01-budget": _result(17.0, 17.0)}}}
    rows, changes = fill_in(export, match, results, columns)
    assert rows == export.rows, "no cell changes"
    assert [(c.student, c.kind) for c in changes] == [("@cy", "excused"), ("ana", "excused")]
    rows, changes = fill_in(export, match, results, columns, overwrite_excused=True)
    assert (rows[2][5], rows[4][5]) == ("0.00", "100.00")
    assert {c.kind for c in changes} == {"unexcused"}


def test_zero_points_possible_is_refused_with_the_column_named():
    export = read_export(EXPORT.replace("100.00,10.00", "0.00,10.00"))
    columns = map_lessons(export, ["01-budget"], {"01-budget": "4101"})
    with pytest.raises(CanvasError, match=r"gives 0 points for Lesson 01 · Budget \(4101\), the column of lesson 01-budget"):
        fill_in(export, match_students(export, ["ana"]), {"ana": {"lessons": {"01-budget": _result(7, 17)}}}, columns)


def test_a_malformed_export_is_refused_with_the_line_that_breaks_it():
    """A stray quote merges the next student's row into one cell; a dropped comma shifts a row.
    Canvas's importer refuses both files, and so does this, naming the line."""
    stray = EXPORT.replace('"Lee, Bo",81002', '"Lee, Bo"x,81002', 1)
    with pytest.raises(CanvasError, match=r"not valid CSV from line 4 on"):
        read_export(stray)
    opened = EXPORT.replace('"Ng, Cy",81003', '"Ng, Cy,81003', 1)
    with pytest.raises(CanvasError, match=r"line 5"):
        read_export(opened)
    short = EXPORT.replace('"Ortiz, Di",81004,S-1004,+di,Section B,,,,,,,', '"Ortiz, Di",81004,S-1004,+di,Section B,,,,,,', 1)
    with pytest.raises(CanvasError, match=r"line 6 of the export has 11 cells where its header has 12"):
        read_export(short)
    assert len(read_export(EXPORT + "\n").students) == 6, "a blank last line is no row"


def test_an_id_in_two_id_columns_on_different_rows_is_refused_naming_both():
    """Cy's Canvas user id is also, as a login, Di's: without --match-on the grader cannot tell
    which learner 81003 is, so it says so instead of choosing one."""
    clash = EXPORT.replace(",S-1004,+di,", ",S-1004,81003,", 1)
    with pytest.raises(CanvasError, match=r"'81003' is in two students' rows.*ID on line 5; SIS Login ID on line 6.*--match-on"):
        match_students(read_export(clash), ["81003"])
    match = match_students(read_export(clash), ["81003"], column="ID")
    assert match.rows["81003"].name == "Ng, Cy"
    same_row = EXPORT.replace(",S-1003,@cy,", ",S-1003,81003,", 1)
    assert match_students(read_export(same_row), ["81003"]).rows["81003"].name == "Ng, Cy"


def test_the_command_keeps_excused_cells_and_says_so(tmp_path, capsys):
    from autograder.__main__ import main
    from autograder.report import grades_csv

    results = tmp_path / "grading-output"
    results.mkdir()
    (results / "grades.csv").write_text(grades_csv({
        "ana": {"lessons": {"01-budget": {**_result(0.0, 17.0, "missing"), "notes": [], "events": []}}},
    }), encoding="utf-8")
    export = tmp_path / "gradebook.csv"
    export.write_text(EXPORT.replace('ana,Section A,72.50', 'ana,Section A,EX'), encoding="utf-8")
    assert main(["canvas", str(export), "--results", str(results), "--map", "01-budget=4101"]) == 0
    said = capsys.readouterr().out
    assert "excused or N/A, kept as they were: 1" in said
    assert read_export((results / "canvas-import.csv").read_text(encoding="utf-8")).rows[2][5] == "EX"
    assert main(["canvas", str(export), "--results", str(results), "--map", "01-budget=4101", "--overwrite-excused"]) == 0
    said = capsys.readouterr().out
    assert "overwritten with scores (--overwrite-excused): 1" in said and "excusal ended: Doe, Ana (ana)" in said
    assert read_export((results / "canvas-import.csv").read_text(encoding="utf-8")).rows[2][5] == "0.00"


# Exports as Canvas and spreadsheets really write them, written back in the layout they came in.

SPLIT = (
    "LastName,FirstName,ID,SIS Login ID,Section,Lesson 01 · Budget (4101)\n"
    "    Points Possible,,,,,100.00\n"
    "Doe,Ana,81001,ana,Section A,72.50\n"
    "Lee,Bo,81002,-bob,Section A,\n"
)


def test_an_export_with_split_names_is_read_and_filled_in():
    """Canvas can export last and first names in columns of their own."""
    export = read_export(SPLIT)
    assert [s.name for s in export.students] == ["Doe, Ana", "Lee, Bo"]
    columns = map_lessons(export, ["01-budget"], {"01-budget": "4101"})
    rows, (change,) = fill_in(export, match_students(export, ["-bob"]), {"-bob": {"lessons": {"01-budget": _result(17, 17)}}},
                              columns)
    assert rows[3] == ["Lee", "Bo", "81002", "-bob", "Section A", "100.00"] and change.name == "Lee, Bo"


def test_semicolons_and_decimal_commas_are_read_and_written_back_so():
    """A spreadsheet in a locale that writes 72,50 separates cells with ';'; the filled-in file
    keeps both, so that the importer reads it as the export was."""
    export = read_export(EXPORT.replace(",", ";").replace(";00", ",00").replace("72.50", "72,50")
                         .replace("8.00", "8,00").replace("100.00", "100,00").replace("10.00", "10,00")
                         .replace('"Doe; Ana"', '"Doe, Ana"'))
    assert export.layout.delimiter == ";" and export.layout.decimal_comma
    assert export.assignments[0].points == 100.0 and export.students[0].name == "Doe, Ana"
    columns = map_lessons(export, ["01-budget"], {"01-budget": "4101"})
    rows, (change,) = fill_in(export, match_students(export, ["ana"]), {"ana": {"lessons": {"01-budget": _result(7.5, 17)}}},
                              columns)
    assert rows[2][5] == "44,12" and change.kind == "lowered"
    text = write_export(rows, export.layout)
    assert text.splitlines()[2].startswith('Doe, Ana;81001;') and ";44,12;" in text
    comma = read_export(EXPORT.replace("100.00,10.00", '"100,00","10,00"'))
    assert comma.layout.delimiter == "," and comma.layout.decimal_comma and comma.assignments[1].points == 10.0


@pytest.mark.parametrize("encoding", ["cp1252", "utf-16", "utf-8-sig", "utf-8"])
def test_an_export_saved_in_another_encoding_is_read_and_written_back_in_it(encoding, tmp_path):
    from autograder.canvas import decode_export

    text = EXPORT.replace("Doe, Ana", "Doñé, Zoë")
    text_read, found = decode_export(text.encode(encoding))
    assert text_read == text and found == encoding
    export = read_export(text_read, found)
    assert export.students[0].name == "Doñé, Zoë" and export.layout.encoding == encoding
    with pytest.raises(CanvasError, match="neither UTF-8, UTF-16 nor Windows-1252"):
        decode_export(b"Student,ID\n\x81\x8d\x8f,1\n")


def test_line_ends_inside_and_between_cells_are_written_back_as_read():
    """Canvas writes CRLF; a Notes cell may hold a line end of its own. Neither changes."""
    crlf = EXPORT.replace("\n", "\r\n").replace("Final Score\r\n", 'Final Score,Notes\r\n', 1)
    crlf = "\r\n".join(line + ("," if i == 1 else (',"two\r\nlines"' if i > 1 else ""))
                       for i, line in enumerate(crlf.split("\r\n")[:-1])) + "\r\n"
    export = read_export(crlf)
    assert export.layout.line_end == "\r\n" and export.rows[2][-1] == "two\r\nlines"
    assert write_export(export.rows, export.layout) == crlf


def test_scores_are_rounded_half_up_as_canvas_shows_them():
    from autograder.canvas import Layout

    assert [Layout().write(x) for x in (0.125, 0.375, 2.675, 44.117647)] == ["0.13", "0.38", "2.68", "44.12"]
    assert Layout(decimal_comma=True).write(0.125) == "0,13"


def test_the_command_reports_failed_grades_and_lessons_without_a_column_and_makes_the_out_folder(tmp_path, capsys):
    from autograder.__main__ import main
    from autograder.report import grades_csv

    results = tmp_path / "grading-output"
    results.mkdir()
    (results / "grades.csv").write_text(grades_csv({
        "ana": {"lessons": {"01-budget": {**_result(0.0, 17.0, "error"), "notes": ["kernel died"], "events": []},
                            "09-extra": {**_result(3.0, 17.0), "notes": [], "events": []}}},
        "-bob": {"lessons": {"01-budget": {**_result(17.0, 17.0), "notes": [], "events": []}}},
    }), encoding="utf-8")
    export = tmp_path / "CS 101 gradebook.csv"
    export.write_bytes(EXPORT.replace("\n", "\r\n").encode("cp1252", errors="strict"))
    out = tmp_path / "new folder" / "import.csv"
    assert main(["canvas", str(export), "--results", str(results), "--map", "01-budget=4101", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "grading failed, so kept as exported: 1" in said
    assert "lessons with no column, not written: 09-extra" in said
    written = out.read_bytes()
    assert written.count(b"\r\n") == EXPORT.count("\n") and b"100.00" in written
