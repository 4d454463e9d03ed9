import unittest

from calc import add, sub


class TestCalc(unittest.TestCase):
    def test_add(self) -> None:
        self.assertEqual(add(2, 3), 5)

    def test_sub(self) -> None:
        self.assertEqual(sub(2, 3), -1)


if __name__ == "__main__":
    unittest.main()
