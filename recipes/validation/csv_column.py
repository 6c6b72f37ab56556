"""Sets one column of a measured-runs CSV (inserting it after `after` when it is new), row by
row, keeping every other field and the file's layout: the *_column.py scripts' shared step."""
import csv


def fill(path, column, value_of, after):
    """value_of(row) -> the column's text for that row ("" for blank)."""
    with open(path, newline="") as source:
        reader = csv.DictReader(source)
        columns = list(reader.fieldnames)
        rows = list(reader)
    if column not in columns:
        columns.insert(columns.index(after) + 1 if after in columns else len(columns), column)
    for row in rows:
        row[column] = value_of(row)
    with open(path, "w", newline="") as target:
        writer = csv.DictWriter(target, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
