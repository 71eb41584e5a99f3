"""The reader's program that the README's and docs/tracing.md's run and trace lines call."""


def f(items, times=1):
    repeated = []
    for item in items:
        repeated.append(item * times)
    return repeated


class Solution:
    def twoSum(self, nums, target):
        seen = {}
        for index, value in enumerate(nums):
            if target - value in seen:
                return [seen[target - value], index]
            seen[value] = index
        return []
