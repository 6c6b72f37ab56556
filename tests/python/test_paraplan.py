#!/usr/bin/env python3
"""The `paraplan` Python module (python/paraplan_module.cc) against the paraplan executable: the
same commands give the same reports, figure for figure; a recipe given as a dict is the recipe its
TOML file holds; failures raise the exception of the CLI's exit code with its one-line message.

Usage: PYTHONPATH=<build>/python test_paraplan.py PARAPLAN_EXECUTABLE
"""
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import unittest

import paraplan

EXECUTABLE = None


def cli(*arguments, allowed=(0,)):
    run = subprocess.run([EXECUTABLE, *arguments, "--json"], capture_output=True, text=True)
    assert run.returncode in allowed, run.stderr
    return json.loads(run.stdout)


def shipped(name):
    return next(r["path"] for r in paraplan.recipes()["recipes"] if r["name"] == name or r["stem"] == name)


class SameAsTheCommandLine(unittest.TestCase):
    def test_evaluate_by_name_with_overrides(self):
        report = paraplan.evaluate("seed1-llama2-70b-4k-64xh100", set={"cluster.num_gpus": 128})
        self.assertEqual(report, cli("evaluate", "seed1-llama2-70b-4k-64xh100", "--set", "cluster.num_gpus=128"))
        # The figures hold together as the report defines them: a step's tokens over its time.
        tokens = report["plan"]["global_batch"] * 4096
        self.assertAlmostEqual(report["throughput"]["tokens_per_s"], tokens / report["time"]["step_s"], delta=1e-6 * tokens)
        self.assertEqual(report["plan"]["mesh"]["dp"], 8)  # 128 GPUs / (tp 8 x pp 2)

    def test_set_takes_strings_and_lists_of_assignments(self):
        by_dict = paraplan.evaluate("seed1-llama2-70b-4k-64xh100",
                                    set={"strategy.pp.schedule": "interleaved-1f1b", "strategy.pp.virtual_stages": 2})
        by_list = paraplan.evaluate("seed1-llama2-70b-4k-64xh100",
                                    set=["strategy.pp.schedule=interleaved-1f1b", "strategy.pp.virtual_stages=2"])
        self.assertEqual(by_dict, by_list)
        self.assertIn("schedule=interleaved-1f1b virtual_stages=2", by_dict["plan"]["strategies"]["pp"])

    def test_simulate_search_validate(self):
        self.assertEqual(paraplan.simulate("simulate/llama2-7b-interleaved-fsdp3-32xh100"),
                         cli("simulate", "simulate/llama2-7b-interleaved-fsdp3-32xh100"))
        searched = paraplan.search("search/gpt3-175b-512xa100", top=3, threads=2, brief=True)
        expected = cli("search", "search/gpt3-175b-512xa100", "--top", "3", "--threads", "2", "--brief")
        for key in ("plans", "valid_plans", "priced_plans", "top"):
            self.assertEqual(searched[key], expected[key], key)
        validated = paraplan.validate(["nemo-h100-fp8"], threads=2)
        self.assertEqual(validated["rows"], cli("validate", "nemo-h100-fp8", "--threads", "2")["rows"])
        self.assertEqual(validated["evaluated"], 9)

    def test_listings(self):
        names = {plugin["name"] for plugin in paraplan.plugins()["plugins"]}
        self.assertTrue({"tp", "pp", "fsdp", "analytic", "simulate", "h100-sxm"} <= names, names)
        self.assertIn("validation/published", {row["name"] for row in paraplan.recipes(data=True)["data_sets"]})
        self.assertEqual(paraplan.hardware("h100-sxm")["gpus_per_node"], 8)


class RecipesAsDicts(unittest.TestCase):
    def test_a_dict_is_the_recipe_its_file_holds(self):
        path = shipped("seed1-llama2-70b-4k-64xh100")
        with open(path, "rb") as file:
            recipe = tomllib.load(file)
        from_dict, from_file = paraplan.evaluate(recipe), paraplan.evaluate(path)
        for report in (from_dict, from_file):
            del report["plan"]["recipe"]
        self.assertEqual(from_dict, from_file)

    def test_a_dict_with_an_unknown_key_is_an_input_error(self):
        with self.assertRaises(paraplan.InputError) as raised:
            paraplan.evaluate({"model": {"preset": "llama2-7b"}, "clster": {"num_gpus": 8}})
        self.assertEqual(raised.exception.exit_code, 3)
        self.assertIn("clster: unknown key (did you mean 'cluster'?)", str(raised.exception))
        self.assertIn("<recipe dict>", str(raised.exception))
        with self.assertRaises(TypeError):
            paraplan.evaluate({"model": {"preset": object()}})


class Failures(unittest.TestCase):
    def test_the_exit_code_picks_the_exception(self):
        with self.assertRaises(paraplan.InputError) as missing:
            paraplan.evaluate("/nonexistent/recipe.toml")
        self.assertEqual(str(missing.exception), "/nonexistent/recipe.toml: cannot open file (No such file or directory)")
        with self.assertRaises(paraplan.UsageError) as usage:
            paraplan.search("search/gpt3-175b-512xa100", top=0)
        self.assertEqual(usage.exception.exit_code, 2)
        self.assertTrue(issubclass(paraplan.InputError, paraplan.Error))

    def test_a_plan_that_does_not_fit_still_returns_its_report(self):
        report = paraplan.evaluate("seed7-llama2-70b-fsdp3-4xb200")
        self.assertFalse(report["memory"]["fits"])
        self.assertEqual(report, cli("evaluate", "seed7-llama2-70b-fsdp3-4xb200", allowed=(1,)))

    def test_html_is_written(self):
        with tempfile.TemporaryDirectory() as directory:
            page = os.path.join(directory, "seed1.html")
            paraplan.evaluate("seed1-llama2-70b-4k-64xh100", html=page)
            with open(page) as file:
                self.assertIn('<script id="paraplan-data"', file.read())


if __name__ == "__main__":
    EXECUTABLE = sys.argv.pop(1)
    unittest.main(verbosity=2)
