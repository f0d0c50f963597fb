module splitbrain

go 1.26.8
